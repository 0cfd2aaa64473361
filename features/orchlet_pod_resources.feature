@component:agent @component:runtime
Feature: Node agent pod security and resources on the runtime
  The node agent turns a pod's security context and resources into the sandbox and container
  configurations the runtime creates: the seccomp profile, the CFS quota of a CPU limit and the
  cgroup the pod runs under. The cgroup scenarios name the pod cgroups and the cgroupfs driver
  themselves (a profile may run its agent without them), and have the runtime report that driver:
  an agent may take its driver from the runtime rather than from --cgroup-driver. The host makes
  the --cgroup-root before the agent starts, as Kubernetes' kubelet requires.

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
        - name: pinned
          image: "busybox:1.36"
          securityContext:
            seccompProfile: {type: Unconfined}
      """
    And the manifest "capped.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: capped}
      spec:
        containers:
        - name: app
          image: "busybox:1.36"
          resources:
            limits: {cpu: 250m, memory: 64Mi}
      """

  @rule:orchlet.option.seccomp-default.runtime-default
  Scenario: With --seccomp-default a container that names no seccomp profile gets RuntimeDefault
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --seccomp-default"
    Then the agent reports pod "web" Running
    And the runtime's container "app" of pod "web" has the seccomp profile RuntimeDefault
    And the runtime's container "pinned" of pod "web" has the seccomp profile Unconfined

  @rule:orchlet.option.seccomp-default.runtime-default
  Scenario: Without --seccomp-default a container that names no seccomp profile runs Unconfined
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "web" Running
    And the runtime's container "app" of pod "web" has the seccomp profile Unconfined

  @rule:orchlet.option.cpu-cfs-quota.enforced
  Scenario: With --cpu-cfs-quota a container's CPU limit is a CFS quota over the period
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --cpu-cfs-quota"
    Then the agent reports pod "capped" Running
    And the runtime's container "app" of pod "capped" has the CPU quota 25000 over the period 100000
    And the runtime's container "app" of pod "web" has the CPU quota 0 over the period 100000

  @rule:orchlet.option.cpu-cfs-quota.enforced
  Scenario: With --cpu-cfs-quota=false a CPU limit sets no CFS quota
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --cpu-cfs-quota=false"
    Then the agent reports pod "capped" Running
    And the runtime's container "app" of pod "capped" has no CPU quota

  @rule:orchlet.option.cgroup-root.runtime-default
  Scenario: Pods run under --cgroup-root, Guaranteed ones directly, the others in their QoS class's cgroup
    Given the runtime's script:
      """
      node: {cgroupDriver: cgroupfs}
      """
    And the host has the cgroup "/orch-conformance-root"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --cgroup-driver=cgroupfs --cgroups-per-qos=true --cgroup-root=/orch-conformance-root"
    Then the agent reports pod "web" Running
    And the agent reports pod "capped" Running
    And the runtime's sandbox of pod "web" has the cgroup parent "/orch-conformance-root/orchpods/besteffort/pod{uid}"
    And the runtime's sandbox of pod "capped" has the cgroup parent "/orch-conformance-root/orchpods/pod{uid}"

  @rule:orchlet.option.cgroup-root.runtime-default
  Scenario: Without --cgroup-root and pod cgroups the runtime places the pod where it defaults to
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --cgroups-per-qos=false --enforce-node-allocatable="
    Then the agent reports pod "web" Running
    And the runtime's sandbox of pod "web" has the cgroup parent ""

  @rule:orchlet.option.pod-max-pids.limit
  Scenario: --pod-max-pids is the pids limit of each pod's cgroup on the host
    Given the runtime's script:
      """
      node: {cgroupDriver: cgroupfs}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --cgroup-driver=cgroupfs --cgroups-per-qos=true --pod-max-pids=64"
    Then the agent reports pod "web" Running
    And the agent reports pod "capped" Running
    And the host's cgroup of pod "web" has "pids.max" "64"
    And the host's cgroup of pod "capped" has "pids.max" "64"
