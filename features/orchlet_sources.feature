@component:agent @component:runtime
Feature: Node agent pod sources and pod workers
  Without --orchconfig the node agent runs in standalone mode: it takes PodSpecs from the files of
  --pod-manifest-path and from --manifest-url, keeps their containers running on the CRI runtime,
  admits no more pods than its capacity and leaves alone the containers it did not create.

  Background:
    Given a container runtime
    And the manifest "web.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: web}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """

  @rule:service.mode.standalone @rule:service.agent.runs-podspecs
  Scenario: Without --orchconfig the agent runs the containers of its manifests
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "web" Running
    And the runtime runs the container "app" of pod "web"

  @rule:service.agent.runs-podspecs
  Scenario: A container that stops is started again
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the runtime runs the container "app" of pod "web"
    When the runtime kills the container "app" of pod "web"
    Then the runtime runs the container "app" of pod "web" again

  @rule:service.sources.file
  Scenario: Manifest files are re-read every --file-check-frequency
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "web" Running
    Given the manifest "db.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: db}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    Then the agent reports pod "db" Running
    When the manifest "web.yaml" is removed
    Then the agent reports no pod "web"
    And the runtime runs no container of pod "web"

  @rule:orchlet.option.pod-manifest-path.dotfiles-ignored
  Scenario: Dot-prefixed files under --pod-manifest-path are ignored
    Given the manifest ".hidden.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: hidden}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "web" Running
    And the agent reports no pod "hidden"

  @rule:service.sources.http
  Scenario: The manifest at --manifest-url is polled every --http-check-frequency
    Given an HTTP server serving the manifest:
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: remote}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    When the agent runs with "--manifest-url={url} --http-check-frequency=1s"
    Then the agent reports pod "remote" Running
    Given the HTTP server serves instead:
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: other}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    Then the agent reports pod "other" Running
    And the agent reports no pod "remote"

  @rule:service.agent.ignores-unmanaged-containers
  Scenario: The agent leaves alone a container it did not create
    Given a container "foreign" created in the runtime by someone else
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "web" Running
    And the container "foreign" created by someone else is still running after 2s

  @rule:orchlet.option.max-pods.admits
  Scenario: The agent runs at most --max-pods pods
    Given manifests for 3 pods named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --max-pods=3 --pods-per-core=0"
    Then the agent reports 3 pods Running and 1 rejected with "OutOfpods"

  @rule:orchlet.option.pods-per-core.cap @rule:limits.agent.pods-per-core
  Scenario: --pods-per-core caps the pods per core
    Given manifests for 1 pod per core and one more, named "p"
    And the manifest "web.yaml" is removed
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --pods-per-core=1"
    Then the agent reports 1 pod per core Running and the rest rejected with "OutOfpods"

  @rule:orchlet.option.pods-per-core.cap @rule:limits.agent.pods-per-core
  Scenario: --max-pods caps the pods whatever --pods-per-core allows
    Given manifests for 2 pods named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --max-pods=2 --pods-per-core=100"
    Then the agent reports 2 pods Running and 1 rejected with "OutOfpods"

  @rule:orchlet.option.pods-per-core.cap @rule:limits.agent.pods-per-core
  Scenario: --pods-per-core 0 disables the per-core cap
    Given manifests for 1 pod per core and one more, named "p"
    And the manifest "web.yaml" is removed
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --pods-per-core=0"
    Then the agent reports 1 pod per core and one more Running

  # A sync of a running pod makes its data directories under --root-dir (the kubelet's
  # makePodDataDirs): one removed comes back by the next sync, three times in a row.
  @rule:orchlet.option.sync-frequency.resync
  Scenario: Running pods are synced at least every --sync-frequency
    When the agent runs with "--root-dir={dir}/root --pod-manifest-path={manifests} --file-check-frequency=1s --sync-frequency=1s"
    Then the agent reports pod "web" Running
    And the agent remakes the "plugins" directory of pod "web" under its root directory within 3s, 3 times in a row

  @rule:orchlet.option.cluster-dns.pods @rule:orchlet.option.cluster-domain.search
  Scenario: A ClusterFirst pod gets the --cluster-dns servers and the --cluster-domain search domains before the node's
    Given the node's resolver configuration "resolv.conf":
      """
      nameserver 192.0.2.53
      search corp.example
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --cluster-dns=10.0.0.10,10.0.0.11 --cluster-domain=cluster.local --resolv-conf={dir}/resolv.conf"
    Then the agent reports pod "web" Running
    And the runtime's sandbox of pod "web" has the DNS servers "10.0.0.10 10.0.0.11" and the search domains "default.svc.cluster.local svc.cluster.local cluster.local corp.example"

  @rule:orchlet.option.cluster-dns.pods
  Scenario: A pod with dnsPolicy Default gets the node's resolver instead of --cluster-dns
    Given the node's resolver configuration "resolv.conf":
      """
      nameserver 192.0.2.53
      search corp.example
      """
    And the manifest "host-dns.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: host-dns}
      spec:
        dnsPolicy: Default
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --cluster-dns=10.0.0.10 --cluster-domain=cluster.local --resolv-conf={dir}/resolv.conf"
    Then the agent reports pod "host-dns" Running
    And the runtime's sandbox of pod "host-dns" has the DNS servers "192.0.2.53" and the search domains "corp.example"

  @rule:orchlet.option.pod-cidr.standalone-only
  Scenario: In standalone mode --pod-cidr goes to the runtime, which gives pods IPs from it
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --pod-cidr=10.123.0.0/24"
    Then the runtime received an UpdateRuntimeConfig call with the pod CIDR "10.123.0.0/24"
    And the agent reports pod "web" Running
    And the agent reports pod "web" with an IP in "10.123.0.0/24"

  @rule:orchlet.option.allowed-unsafe-sysctls.pods @component:agent-events
  Scenario: A pod may set the unsafe sysctls --allowed-unsafe-sysctls allows, and is rejected for any other
    Given the manifest "tuned.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: tuned}
      spec:
        securityContext:
          sysctls:
          - {name: net.core.somaxconn, value: "1024"}
          - {name: net.ipv4.tcp_syncookies, value: "1"}
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    And the manifest "forbidden.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: forbidden}
      spec:
        securityContext:
          sysctls:
          - {name: kernel.msgmax, value: "65536"}
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --allowed-unsafe-sysctls=net.core.*"
    Then the agent reports pod "tuned" Running
    And the runtime's sandbox of pod "tuned" has the sysctl "net.core.somaxconn" set to "1024"
    And the agent reports pod "forbidden" rejected with "SysctlForbidden"
    And the agent recorded a Warning event "SysctlForbidden" about pod "forbidden"
    And the runtime runs no container of pod "forbidden"
