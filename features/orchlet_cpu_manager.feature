@component:agent @component:runtime @component:apiserver
Feature: Node agent CPU manager
  With --cpu-manager-policy=static the node agent keeps each running container's cpuset on the
  runtime, reconciling every --cpu-manager-reconcile-period; a cpuset the runtime failed to take is
  sent again at the next reconcile, so the pace of those attempts is the reconcile period.

  Background:
    Given a container runtime
    And the runtime's script:
      """
      faults:
      - {method: UpdateContainerResources, error: {code: Unavailable, message: cpuset refused}}
      """

  @rule:orchlet.option.cpu-manager-reconcile-period.follows-node-status
  Scenario: Without --cpu-manager-reconcile-period the CPU manager reconciles every --node-status-update-frequency
    When the agent runs in API-server mode with "--root-dir={dir}/root --cpu-manager-policy=static --reserved-cpus=0 --node-status-update-frequency=2s"
    And a pod "web" bound to the agent's node is created through the API
    Then the API server reports pod "web" Running
    And the runtime's UpdateContainerResources calls come one every 2s

  @rule:orchlet.option.cpu-manager-reconcile-period.follows-node-status
  Scenario: --cpu-manager-reconcile-period, when given, sets the reconcile period whatever the node status frequency
    When the agent runs in API-server mode with "--root-dir={dir}/root --cpu-manager-policy=static --reserved-cpus=0 --node-status-update-frequency=4s --cpu-manager-reconcile-period=1s"
    And a pod "web" bound to the agent's node is created through the API
    Then the API server reports pod "web" Running
    And the runtime's UpdateContainerResources calls come one every 1s
