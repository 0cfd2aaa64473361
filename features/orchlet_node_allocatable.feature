@component:agent @component:runtime
Feature: Node agent process settings and node allocatable on the host
  Before it runs a pod the node agent sets its own process up (its OOM score adjustment, its
  open-files limit) and sizes the cgroups of node allocatable: the pods'
  cgroup to the node's capacity less the reservations, each enforced reserved cgroup to its
  reservation. These scenarios read the host's procfs and cgroup filesystem. They raise the OOM
  score and lower the open-files limit, which a process may do without CAP_SYS_RESOURCE. The
  runtime reports the cgroupfs driver the scenarios name: an agent may take its driver from the
  runtime rather than from --cgroup-driver.

  Background:
    Given a container runtime
    And the runtime's script:
      """
      node: {cgroupDriver: cgroupfs}
      """

  @rule:orchlet.option.oom-score-adj.applied @rule:orchlet.option.max-open-files.applied
  Scenario: The agent applies its OOM score adjustment and open-files limit to itself
    When the agent runs with "--oom-score-adj=500 --max-open-files=4096"
    Then the running agent's process has the OOM score adjustment 500
    And the running agent's process has the open-files limit 4096

  @rule:orchlet.option.enforce-node-allocatable.pods
  Scenario: The pods' cgroup is the capacity less the reservations, not less the eviction threshold
    When the agent runs with "--cgroups-per-qos=true --enforce-node-allocatable=pods --cgroup-driver=cgroupfs --kube-reserved=cpu=500m,memory=1Gi --system-reserved=memory=512Mi --eviction-hard=memory.available<1Gi"
    Then the host's cgroup "/orchpods" has the memory limit "{memory}-1536Mi"
    And the host's cgroup "/orchpods" has the cpu shares of "{cpus}-500m"

  @rule:orchlet.option.enforce-node-allocatable.pods
  Scenario: Without pods enforced the pods' cgroup gets the node's capacity
    Given the host has the cgroup "/orch-conformance-capacity"
    And the host has the cgroup "/orch-conformance-reserved"
    When the agent runs with "--cgroups-per-qos=true --cgroup-driver=cgroupfs --kube-reserved=memory=1Gi --enforce-node-allocatable=orch-reserved-compressible --kube-reserved-cgroup=/orch-conformance-reserved --cgroup-root=/orch-conformance-capacity"
    Then the host's cgroup "/orch-conformance-capacity/orchpods" has the memory limit "{memory}"

  @rule:orchlet.option.enforce-node-allocatable.reserved-limits
  Scenario: The reserved cgroups are limited to their reservations, the compressible level to cpu only
    Given the host has the cgroup "/orch-conformance-reserved"
    And the host has the cgroup "/orch-conformance-system"
    When the agent runs with "--cgroups-per-qos=true --cgroup-driver=cgroupfs --kube-reserved=cpu=500m,memory=1Gi --kube-reserved-cgroup=/orch-conformance-reserved --system-reserved=cpu=1,memory=512Mi --system-reserved-cgroup=/orch-conformance-system --enforce-node-allocatable=pods,orch-reserved,system-reserved-compressible"
    Then the host's cgroup "/orch-conformance-reserved" has the memory limit "1Gi"
    And the host's cgroup "/orch-conformance-reserved" has the cpu shares of "500m"
    And the host's cgroup "/orch-conformance-system" has the cpu shares of "1"
    And the host's cgroup "/orch-conformance-system" has the memory limit "max"

  @rule:orchlet.option.runtime-cgroups.system-container
  Scenario: The runtime's cgroup is the stats summary's runtime system container, beside the pods'
    Given the host has the cgroup "/orch-conformance-runtime"
    When the agent runs with "--runtime-cgroups=/orch-conformance-runtime"
    Then the agent's stats summary has the system containers "runtime,pods"

  @rule:orchlet.option.enforce-node-allocatable.reserved-cgroup-missing
  Scenario: A reserved cgroup the host does not have stops the agent, naming it
    Then the agent run with "--cgroups-per-qos=true --cgroup-driver=cgroupfs --system-reserved=memory=512Mi --system-reserved-cgroup=/orch-conformance-absent --enforce-node-allocatable=pods,system-reserved" exits naming "/orch-conformance-absent"

  @rule:orchlet.admission.resources-fit
  Scenario: A pod requesting more than the node's allocatable is refused, one that fits runs
    Given the manifest "huge.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: huge}
      spec:
        containers:
        - name: app
          image: "busybox:1.36"
          resources:
            requests: {memory: 1Ei}
      """
    And the manifest "small.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: small}
      spec:
        containers:
        - name: app
          image: "busybox:1.36"
          resources:
            requests: {cpu: 10m, memory: 16Mi}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --kube-reserved=memory=256Mi"
    Then the agent reports pod "huge" rejected with "OutOfmemory"
    And the agent reports pod "small" Running
