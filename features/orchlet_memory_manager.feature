@component:agent @component:runtime
Feature: Node agent memory manager
  With --memory-manager-policy=Static the node agent gives each container of a Guaranteed pod its
  memory from NUMA nodes, records it in <root-dir>/memory_manager_state in the kubelet's format and
  creates the container with cpuset.mems of those nodes; --reserved-memory must add up to what
  node allocatable reserves and name NUMA nodes the machine has. These scenarios read the host's
  NUMA layout from sysfs: every Linux machine has NUMA node 0, where the one pod's memory goes.

  Background:
    Given a container runtime

  @rule:orchlet.option.memory-manager-policy.static
  Scenario: A Guaranteed pod's container is created with the NUMA nodes of its memory, a Burstable one without
    Given the manifest "guaranteed.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: guaranteed}
      spec:
        containers:
        - name: app
          image: "busybox:1.36"
          resources:
            limits: {cpu: 100m, memory: 64Mi}
      """
    And the manifest "burstable.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: burstable}
      spec:
        containers:
        - name: app
          image: "busybox:1.36"
          resources:
            requests: {memory: 16Mi}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --root-dir={dir}/root --memory-manager-policy=Static --reserved-memory=0:memory=100Mi --eviction-hard=memory.available<100Mi"
    Then the agent reports pod "guaranteed" Running
    And the runtime's container "app" of pod "guaranteed" has cpuset.mems "0"
    And the agent reports pod "burstable" Running
    And the runtime's container "app" of pod "burstable" has no cpuset.mems
    And the memory manager's checkpoint "{dir}/root/memory_manager_state" of policy "Static" gives the container "app" 67108864 bytes of memory on NUMA nodes "0"

  @rule:orchlet.option.reserved-memory.numa-nodes
  Scenario: --reserved-memory naming a NUMA node the machine lacks stops the agent, naming it
    Then the agent run with "--root-dir={dir}/root --memory-manager-policy=Static --reserved-memory=63:memory=100Mi --eviction-hard=memory.available<100Mi" exits naming "NUMA node 63"

  @rule:orchlet.option.memory-manager-policy.checkpoint
  Scenario: A checkpoint written under another policy stops the agent
    Given the file "root/memory_manager_state":
      """
      {"policyName":"None","machineState":{},"checksum":4236770233}
      """
    Then the agent run with "--root-dir={dir}/root --memory-manager-policy=Static --reserved-memory=0:memory=100Mi --eviction-hard=memory.available<100Mi" exits naming "differs from state checkpoint policy"
