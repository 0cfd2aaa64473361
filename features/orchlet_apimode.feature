@component:agent @component:runtime @component:apiserver
Feature: Node agent in API-server mode
  With --orchconfig the node agent registers its node with the API server, posts the node's
  status and renews its lease, takes the pods bound to the node from the API server, runs them on
  the CRI runtime and reports their status there, and confirms their deletion once they stopped.

  Background:
    Given a container runtime

  @rule:service.mode.apiserver @rule:service.agent.registers-node @rule:orchlet.option.hostname-override.used @rule:orchlet.option.register-node.needs-orchconfig
  Scenario: The agent registers its node under the hostname override
    When the agent runs in API-server mode with ""
    Then the API server has the agent's node
    And the agent's node is Ready
    And the agent's node has the label "orch.io/hostname=node-conformance"
    And the agent's node reports the Hostname address "node-conformance"

  @rule:service.sources.apiserver @rule:service.mode.apiserver
  Scenario: A pod bound to the node runs, reports its status, and goes once deleted
    When the agent runs in API-server mode with ""
    And a pod "web" bound to the agent's node is created through the API
    Then the API server reports pod "web" Running
    And the runtime runs the container "app" of pod "web"
    When pod "web" is deleted through the API
    Then pod "web" is gone from the API

  @rule:orch.apiserver.pods.connect
  Scenario: kubectl's logs, exec, port-forward and node proxy reach the pod through the API server
    Given the runtime's script:
      """
      containers:
      - match: {name: app}
        logs: {lines: ["line {n}"], every: 100ms, count: 3}
      ports:
      - {port: 7, echo: true}
      """
    When the agent runs in API-server mode with "--node-ip={hostIP} --address=0.0.0.0"
    And a pod "web" bound to the agent's node is created through the API
    Then the API server reports pod "web" Running
    And the log of pod "web" through the API server ends with "line 3"
    And an exec of "seq 1 200000" in pod "web" through the API server over SPDY writes the numbers in order
    And an exec of "seq 1 200000" in pod "web" through the API server over WebSocket writes the numbers in order
    And a port-forward to port 7 of pod "web" through the API server over SPDY echoes 16 MiB unchanged
    And a port-forward to port 7 of pod "web" through the API server over WebSocket echoes 16 MiB unchanged
    And GET "/api/v1/nodes/node-conformance/proxy/pods" through the API server answers 200 with "PodList"
    And GET "/api/v1/nodes/node-conformance/proxy/healthz" through the API server answers 200 with "ok"

  @rule:orch.apiserver.pods.ephemeral-containers
  Scenario: kubectl debug's ephemeral container joins the running pod
    When the agent runs in API-server mode with ""
    And a pod "web" bound to the agent's node is created through the API
    Then the API server reports pod "web" Running
    And adding an ephemeral container "app" targeting "" to pod "web" through the API is refused with 422 and "spec.ephemeralContainers[0].name: Duplicate value"
    And adding an ephemeral container "debugger" targeting "nope" to pod "web" through the API is refused with 422 and "spec.ephemeralContainers[0].targetContainerName: Not found"
    When an ephemeral container "debugger" targeting "app" is added to pod "web" through the API
    Then the API server reports ephemeral container "debugger" of pod "web" running
    And the runtime runs the container "debugger" of pod "web"
    And the API server reports pod "web" Running

  @rule:orch.apiserver.events.core-view
  Scenario: The agent's events are served as core v1 Events too, selected by the object they regard
    When the agent runs in API-server mode with ""
    And a pod "web" bound to the agent's node is created through the API
    Then the API server reports pod "web" Running
    And GET "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb,involvedObject.kind%3DPod" through the API server answers 200 with "Started container app"
    And GET "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb,reason%3DStarted,type%3DNormal" through the API server answers 200 with "involvedObject"

  @rule:orchlet.option.node-labels.registered
  Scenario: --node-labels are added to the node at registration
    When the agent runs in API-server mode with "--node-labels=example.com/team=a,node.orch.io/pool=blue"
    Then the agent's node has the label "example.com/team=a"
    And the agent's node has the label "node.orch.io/pool=blue"

  @rule:orchlet.option.enable-controller-attach-detach.no-attach
  Scenario: By default the node is left to the attach/detach controller, which its annotation tells
    When the agent runs in API-server mode with ""
    Then the agent's node has the annotation "volumes.orch.io/controller-managed-attach-detach=true"

  @rule:orchlet.option.enable-controller-attach-detach.no-attach
  Scenario: --enable-controller-attach-detach=false registers the node without the annotation
    When the agent runs in API-server mode with "--enable-controller-attach-detach=false"
    Then the agent's node has no annotation "volumes.orch.io/controller-managed-attach-detach"

  @rule:orchlet.option.register-with-taints.needs-register-node
  Scenario: --register-with-taints taints a registered node
    When the agent runs in API-server mode with "--register-with-taints=dedicated=infra:NoSchedule"
    Then the agent's node has the taint "dedicated=infra:NoSchedule"

  @rule:orchlet.option.cloud-provider.external-registration
  Scenario: With an external cloud provider the node registers uninitialized, its addresses left to the controller
    When the agent runs in API-server mode with "--cloud-provider=external --register-with-taints=dedicated=infra:NoSchedule"
    Then the agent's node has the taint "node.cloudprovider.orch.io/uninitialized=true:NoSchedule"
    And the agent's node has the taint "dedicated=infra:NoSchedule"
    And the agent's node reports only the Hostname address "node-conformance"

  @rule:orchlet.option.cloud-provider.external-registration
  Scenario: With an external cloud provider --node-ip is registered and handed to the controller
    When the agent runs in API-server mode with "--cloud-provider=external --node-ip={hostIP}"
    Then the agent's node reports the InternalIP address "{hostIP}"
    And the agent's node has the annotation "alpha.orch.io/provided-node-ip={hostIP}"

  @rule:orchlet.option.register-with-taints.needs-register-node @rule:orchlet.option.register-node.needs-orchconfig
  Scenario: Without --register-node the agent registers nothing and taints nothing
    Given the node is created through the API
    When the agent runs in API-server mode with "--register-node=false --register-with-taints=dedicated=infra:NoSchedule"
    Then the agent's node is Ready
    And the agent's node has no taints

  @rule:orchlet.option.register-node.needs-orchconfig
  Scenario: --register-node=false with no node in the API registers none
    When the agent runs in API-server mode with "--register-node=false"
    Then the API server never has the agent's node

  @rule:orchlet.option.register-node.needs-orchconfig
  Scenario: API-server-mode options are refused without --orchconfig
    Given the manifest "web.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: web}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    When the agent starts with "--register-node=false --pod-manifest-path={manifests}"
    Then it refuses to start naming "--register-node"

  @rule:orchlet.option.node-ip.default-family
  Scenario: --node-ip sets the node's address
    When the agent runs in API-server mode with "--node-ip=192.0.2.10"
    Then the agent's node reports the InternalIP address "192.0.2.10"

  @rule:orchlet.option.node-ip.default-family
  Scenario: Without --node-ip the node reports the host's default IPv4 address
    When the agent runs in API-server mode with ""
    Then the agent's node reports an InternalIP address of the host's default IPv4 family

  @rule:orchlet.option.node-status-update-frequency.posted
  Scenario: Node status is posted every --node-status-update-frequency, and the lease renewed
    When the agent runs in API-server mode with "--node-status-update-frequency=3s"
    Then the agent's node status is posted every 3 seconds
    And the agent renews its lease in "orch-node-lease"

  @rule:orchlet.option.node-status-max-images.cap
  Scenario: Node status reports at most --node-status-max-images images
    Given the manifest "db.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: db}
      spec:
        containers:
        - {name: app, image: "redis:7"}
      """
    And the manifest "web.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: web}
      spec:
        containers:
        - {name: app, image: "busybox:1.36"}
      """
    When the agent runs in API-server mode with "--pod-manifest-path={manifests} --node-status-max-images=1 --node-status-update-frequency=1s"
    Then the runtime runs the container "app" of pod "db"
    And the runtime runs the container "app" of pod "web"
    And the agent's node reports 1 image

  @rule:orchlet.option.kube-reserved.allocatable
  Scenario: --kube-reserved and --system-reserved are subtracted from node allocatable
    When the agent runs in API-server mode with "--kube-reserved=cpu=500m,memory=256Mi --system-reserved=memory=256Mi --eviction-hard=memory.available<100Mi"
    Then the agent's node reports allocatable cpu "500m" less than its capacity
    And the agent's node reports allocatable memory "612Mi" less than its capacity

  @rule:orchlet.option.experimental-allocatable-ignore-eviction.allocatable
  Scenario: The hard memory eviction threshold is held back from allocatable unless --experimental-allocatable-ignore-eviction
    When the agent runs in API-server mode with "--eviction-hard=memory.available<300Mi"
    Then the agent's node reports allocatable memory "300Mi" less than its capacity

  @rule:orchlet.option.experimental-allocatable-ignore-eviction.allocatable
  Scenario: With --experimental-allocatable-ignore-eviction the hard eviction threshold stays in allocatable
    When the agent runs in API-server mode with "--eviction-hard=memory.available<300Mi --experimental-allocatable-ignore-eviction"
    Then the agent's node reports allocatable memory "0" less than its capacity

  # That events and heartbeats are outside this budget is the agent's own wiring (separate clients,
  # limited by --event-qps or not at all), shown by its unit tests; a black box sees only that the
  # pods' requests keep within the budget.
  @rule:orchlet.option.kube-api-rate.zero-means-default
  Scenario: --kube-api-qps 0 and --kube-api-burst 0 limit the agent's requests to 50 per second with a burst of 100
    When the agent runs in API-server mode through a recording proxy with "--kube-api-qps=0 --kube-api-burst=0 --max-pods=250"
    Then the agent's node is Ready
    When 200 pods bound to the agent's node are created through the API
    Then the API server reports the 200 pods Running
    And the agent's pod requests stay within 50 per second with a burst of 100

  # In API-server mode the agent's events are created through the API server, where their rate is
  # seen. The pods' containers exit after a second and are restarted, so events keep coming
  # (created, started, back-off) faster than either limit, for as long as the check waits: an agent
  # may drop what its limit holds back (orch) or send it later (Kubernetes' kubelet, whose event
  # client waits for the limiter). This shows the limit holds (no stretch above the bucket), not
  # that it is not lower; orchlet_events.feature shows both for a standalone agent.
  @rule:events.agent.rate-limit
  Scenario: The agent creates its events through the API server within --event-qps and --event-burst
    Given the runtime's script:
      """
      containers:
      - {match: {name: app}, exit: {after: 1s, code: 1}}
      """
    When the agent runs in API-server mode through a recording proxy with "--event-qps=2 --event-burst=4"
    Then the agent's node is Ready
    When 20 pods bound to the agent's node are created through the API
    Then the agent's event creations stay within 2 per second with a burst of 4

  @rule:orchlet.option.event-qps.zero-means-5 @rule:orchlet.option.event-burst.zero-means-10 @rule:limits.agent.event-rate-zero
  Scenario: --event-qps 0 and --event-burst 0 create events through the API server within 5 per second and a burst of 10
    Given the runtime's script:
      """
      containers:
      - {match: {name: app}, exit: {after: 1s, code: 1}}
      """
    When the agent runs in API-server mode through a recording proxy with "--event-qps=0 --event-burst=0"
    Then the agent's node is Ready
    When 20 pods bound to the agent's node are created through the API
    Then the agent's event creations stay within 5 per second with a burst of 10
