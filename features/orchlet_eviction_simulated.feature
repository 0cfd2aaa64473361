@component:simulator
Feature: Node agent eviction over minutes, replayed in simulated time
  Minimum reclaim and the pressure transition period show only under memory pressure that holds,
  or comes and goes, for minutes: more than a real node can be driven into in reasonable time. The
  simulator replays them with the node agent's own eviction code against a simulated host and
  runtime, on a simulated clock (scenarios/README.md describes the scenario format); each scenario
  fills {args} with the agent's options and reads the replay's trace.

  @rule:orchlet.option.eviction-minimum-reclaim.reclaims
  Scenario Outline: A threshold met stays met until its signal is above threshold plus minimum reclaim
    Given the simulated node scenario "pressure.yaml":
      """
      description: |
        Three BestEffort pods use 350Mi, 250Mi and 10Mi on a 1Gi node (200Mi outside pods); at 1m
        the third grows to 200Mi and available memory drops to about 24Mi, under the 100Mi hard
        threshold. Evicting the largest (350Mi) leaves about 374Mi available.
      duration: 3m
      omit: ["cri List*", "cri ContainerStatus *", "cri PodSandboxStatus *", "cri ImageStatus *", "cri Version *", "cri Status *",
        "api get nodes *", "api update leases *", "api update nodes/status *", "source api MODIFIED *", "event create Normal *"]
      nodes:
        - name: node-a
          api: true
          args: {args}
          host: {memory: 1Gi, systemMemory: 200Mi}
          fakecri:
            containers:
              - match: {image: "big*"}
                usage: {memory: 350Mi}
              - match: {image: "medium*"}
                usage: {memory: 250Mi}
              - match: {image: "grower*"}
                usage: {memory: {steps: [{at: 0s, value: 10Mi}, {at: 55s, value: 200Mi}]}}
      timeline:
        - at: 5s
          createPod: |
            {apiVersion: v1, kind: Pod, metadata: {name: big}, spec: {nodeName: node-a, containers: [{name: app, image: "big:1"}]}}
        - at: 5s
          createPod: |
            {apiVersion: v1, kind: Pod, metadata: {name: medium}, spec: {nodeName: node-a, containers: [{name: app, image: "medium:1"}]}}
        - at: 5s
          createPod: |
            {apiVersion: v1, kind: Pod, metadata: {name: grower}, spec: {nodeName: node-a, containers: [{name: app, image: "grower:1"}]}}
      """
    When the simulator replays "pressure.yaml" with the agent options "--eviction-hard=memory.available<100Mi --eviction-pressure-transition-period=30s <reclaim>"
    Then the simulated trace has a line "00:01:00.000 node-a event create Warning Evicted default/big: *"
    And the simulated trace has <evictions> lines "* event create Warning Evicted *"
    And the simulated trace has <medium> line "* event create Warning Evicted default/medium: *"
    And the simulated trace has no line "* pod default/grower Failed *"

    Examples:
      | reclaim                                          | evictions | medium |
      | --eviction-minimum-reclaim=memory.available=300Mi | 2         | 1      |
      | --eviction-minimum-reclaim=memory.available=0     | 1         | 0      |

  @rule:orchlet.option.eviction-pressure-transition-period.waits
  Scenario Outline: MemoryPressure is left only once the threshold has not been met for the transition period
    Given the simulated node scenario "flapping.yaml":
      """
      description: |
        A static pod (critical: never evicted) flaps its memory on a 1Gi node (200Mi outside pods)
        between 100Mi and 800Mi, 30s each way, for three cycles, so memory.available crosses the
        100Mi hard threshold back and forth; the eviction manager looks every 10s, last seeing the
        threshold met at 3m20s.
      duration: 8m
      omit: ["cri List*", "cri ContainerStatus *", "cri PodSandboxStatus *", "cri ImageStatus *", "cri Version *", "cri Status *", "event create Normal *", "source file read *"]
      nodes:
        - name: node-a
          args: {args}
          host: {memory: 1Gi, systemMemory: 200Mi}
          manifests:
            - name: flapper.yaml
              content: |
                {apiVersion: v1, kind: Pod, metadata: {name: flapper}, spec: {containers: [{name: app, image: "flapper:1"}]}}
          fakecri:
            containers:
              - match: {image: "flapper*"}
                usage: {memory: {steps: [{at: 0s, value: 100Mi}, {at: 55s, value: 800Mi}, {at: 85s, value: 100Mi}, {at: 115s, value: 800Mi},
                  {at: 145s, value: 100Mi}, {at: 175s, value: 800Mi}, {at: 205s, value: 100Mi}]}}
      """
    When the simulator replays "flapping.yaml" with the agent options "--pod-manifest-path=/etc/orch/manifests --eviction-hard=memory.available<100Mi <transition>"
    Then the simulated trace has a line "00:01:00.000 node-a node conditions MemoryPressure"
    And the simulated trace has <changes> lines "* node-a node conditions *"
    And the simulated trace has a line "<cleared> node-a node conditions none"
    And the simulated trace has no line "* Warning Evicted *"

    Examples:
      | transition                                 | changes | cleared      |
      | --eviction-pressure-transition-period=2m  | 2       | 00:05:20.000 |
      | --eviction-pressure-transition-period=30s | 6       | 00:03:50.000 |

  @rule:orchlet.option.kernel-memcg-notification.notified
  Scenario Outline: With --kernel-memcg-notification a memory threshold crossed is acted on at the crossing, not at the next 10s observation
    Given the simulated node scenario "memcg.yaml":
      """
      description: |
        A BestEffort pod's memory steps from 10Mi to 800Mi at 57s on a 1Gi node (200Mi outside pods),
        taking memory.available under the 100Mi hard threshold between two of the eviction manager's
        10s observations. The simulated host's memory cgroup notifies thresholds armed on its usage.
      duration: 2m
      omit: ["cri List*", "cri ContainerStatus *", "cri PodSandboxStatus *", "cri ImageStatus *", "cri Version *", "cri Status *",
        "api get nodes *", "api update leases *", "api update nodes/status *", "source api MODIFIED *", "event create Normal *"]
      nodes:
        - name: node-a
          api: true
          args: {args}
          host: {memory: 1Gi, systemMemory: 200Mi}
          fakecri:
            containers:
              - match: {image: "grower*"}
                usage: {memory: {steps: [{at: 0s, value: 10Mi}, {at: 52s, value: 800Mi}]}}
      timeline:
        - at: 5s
          createPod: |
            {apiVersion: v1, kind: Pod, metadata: {name: grower}, spec: {nodeName: node-a, containers: [{name: app, image: "grower:1"}]}}
      """
    When the simulator replays "memcg.yaml" with the agent options "--eviction-hard=memory.available<100Mi <notification>"
    Then the simulated trace has a line "<at> node-a event create Warning Evicted default/grower: The node was low on resource: memory. *"
    And the simulated trace has 1 line "* event create Warning Evicted *"

    Examples:
      | notification                      | at           |
      | --kernel-memcg-notification       | 00:00:57.000 |
      | --kernel-memcg-notification=false | 00:01:00.000 |

  @rule:orchlet.option.volume-stats-agg-period.negative-disables
  Scenario Outline: Volume usage is measured every --volume-stats-agg-period, and never when it is zero or negative
    Given the simulated node scenario "emptydir.yaml":
      """
      description: |
        writer writes 1Mi a second to its emptyDir "cache" (sizeLimit 100Mi) from 5s, passing the limit
        at 1m45s. A pod over an emptyDir's sizeLimit is evicted at the first eviction round after a
        volume measurement sees it; without measurements nothing sees it.
      duration: 4m
      omit: ["cri List*", "cri ContainerStatus *", "cri PodSandboxStatus *", "cri ImageStatus *", "cri Version *", "cri Status *",
        "api get nodes *", "api update leases *", "api update nodes/status *", "source api MODIFIED *", "event create Normal *"]
      nodes:
        - name: node-a
          api: true
          args: {args}
          fakecri:
            containers:
              - {match: {pod: "writer"}, usage: {volumes: {"/cache": {ramp: {from: 0, perSecond: 1Mi}}}}}
      timeline:
        - at: 5s
          createPod: |
            {apiVersion: v1, kind: Pod, metadata: {name: writer}, spec: {nodeName: node-a,
              containers: [{name: app, image: "app:1", volumeMounts: [{name: cache, mountPath: /cache}]}],
              volumes: [{name: cache, emptyDir: {sizeLimit: 100Mi}}]}}
      """
    When the simulator replays "emptydir.yaml" with the agent options "<period>"
    Then the simulated trace has <evictions> line "<at> node-a event create Warning Evicted default/writer: Usage of EmptyDir volume *"

    Examples:
      | period                          | evictions | at           |
      | --v=0                           | 1         | 00:02:00.000 |
      | --volume-stats-agg-period=50s   | 1         | 00:02:30.000 |
      | --volume-stats-agg-period=0     | 0         | *            |
      | --volume-stats-agg-period=-1s   | 0         | *            |
