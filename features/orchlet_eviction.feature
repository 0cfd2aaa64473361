@component:agent @component:runtime @component:apiserver
Feature: Node agent eviction
  The node agent watches its node's memory, filesystems and processes every 10 seconds against the
  eviction thresholds. When a hard threshold is met it evicts a pod at once; a soft threshold must
  hold for its grace period first, and the pod then gets the lesser of --eviction-max-pod-grace-period
  and its own grace period. An evicted pod is Failed with reason Evicted, and the node reports the
  pressure. A threshold of 99% of the machine's memory is met on any machine, so these scenarios
  need no real pressure. (Minimum reclaim and the transition period are replayed in simulated time:
  orchlet_eviction_simulated.feature; the ranking in scenarios/eviction-ranking.yaml.) The hog
  ignores SIGTERM, as a process holding memory may, so it is killed when its grace period runs out:
  Kubernetes' kubelet reports an evicted pod whose containers all exit 0 Succeeded, not Failed. The
  runtime's image filesystem is "/", which the agent's eviction manager can measure. A hard
  eviction's grace period is 0, and each container still gets the 2s any kill gives it.

  Background:
    Given a container runtime
    And the runtime's script:
      """
      node:
        imageFs: {mountpoint: /}
      containers:
      - match: {pod: hog}
        stop: {delay: 10m}
      """

  @rule:orchlet.option.eviction-hard.triggers
  Scenario: A hard threshold met evicts a pod at once
    When the agent runs in API-server mode with "--eviction-hard=memory.available<99%"
    And a pod "hog" requesting 16Mi of memory with a termination grace period of 30s is bound to the agent's node through the API
    Then the API server reports pod "hog" Failed with reason "Evicted" and a message starting "The node was low on resource: memory. Threshold quantity: "
    And the agent's node reports MemoryPressure True
    And the runtime stopped a container with a 2s timeout

  @rule:orchlet.option.eviction-soft.after-grace @rule:orchlet.option.eviction-max-pod-grace-period.effective
  Scenario: A soft threshold evicts only once held for its grace period, with the lesser grace period
    When the agent runs in API-server mode with "--eviction-hard= --eviction-soft=memory.available<99% --eviction-soft-grace-period=memory.available=20s --eviction-max-pod-grace-period=5"
    And a pod "hog" requesting 16Mi of memory with a termination grace period of 30s is bound to the agent's node through the API
    Then the API server reports pod "hog" Running
    And the agent's node reports MemoryPressure True
    And pod "hog" is not Failed in the API for 5 seconds
    And the API server reports pod "hog" Failed with reason "Evicted" and a message starting "The node was low on resource: memory. "
    And the runtime stopped a container with a 5s timeout
