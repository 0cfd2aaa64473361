@component:simulator
Feature: Node agent start-up checks on simulated machines
  Swap, the cgroup version and kernel tunables are facts of the machine the suite runs on, which a
  scenario cannot choose. The simulator replays the node agent's own start-up checks against a
  simulated machine whose swap, cgroup version and tunables the scenario sets; an agent that
  refuses to start shows as "orchlet refused to start: <why>" in the trace, and runs nothing.

  Scenario Outline: The agent refuses a machine that fails a check it is asked to make, and only then
    Given the simulated node scenario "host.yaml":
      """
      description: A machine with <machine>.
      duration: 3s
      omit: ["cri List*", "cri *Status *", "event *"]
      nodes:
        - name: node-a
          args: {args}
          host: <host>
          manifests:
            - name: web.yaml
              content: |
                {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: app, image: "nginx:1.27"}]}}
      """
    When the simulator replays "host.yaml" with the agent options "--pod-manifest-path=/etc/orch/manifests <options>"
    Then the simulated trace has <refusals> line "00:00:00.000 node-a world orchlet refused to start: <why>"
    And the simulated trace has <running> line "* node-a pod default/web-node-a Running app=running"

    @rule:errors.agent.fail-swap-on
    Examples: --fail-swap-on (true by default)
      | machine        | host           | options              | refusals | running | why                                                                    |
      | swap on        | {swap: true}   |                      | 1        | 0       | --fail-swap-on: swap is on; turn swap off or set --fail-swap-on=false |
      | swap on        | {swap: true}   | --fail-swap-on=false | 0        | 1       | *                                                                      |
      | swap off       | {swap: false}  |                      | 0        | 1       | *                                                                      |

    @rule:errors.agent.fail-cgroupv1
    Examples: --fail-cgroupv1
      | machine   | host               | options         | refusals | running | why                                           |
      | cgroup v1 | {cgroupVersion: 1} | --fail-cgroupv1 | 1        | 0       | --fail-cgroupv1: the host uses cgroup v1      |
      | cgroup v1 | {cgroupVersion: 1} |                 | 0        | 1       | *                                             |
      | cgroup v2 | {cgroupVersion: 2} | --fail-cgroupv1 | 0        | 1       | *                                             |

    @rule:errors.agent.protect-kernel-defaults
    Examples: --protect-kernel-defaults
      | machine                | host                                   | options                   | refusals | running | why                                                                            |
      | vm/panic_on_oom 1      | {sysctls: {"vm/panic_on_oom": 1}}      | --protect-kernel-defaults | 1        | 0       | --protect-kernel-defaults: kernel tunable vm/panic_on_oom is 1, want 0 |
      | vm/panic_on_oom 1      | {sysctls: {"vm/panic_on_oom": 1}}      |                           | 0        | 1       | *                                                                              |
      | Kubernetes' defaults   | {}                                     | --protect-kernel-defaults | 0        | 1       | *                                                                              |
