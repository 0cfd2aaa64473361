@component:agent @component:runtime @component:agent-events
Feature: Node agent garbage collection
  The node agent deletes unused images when the image filesystem is at or above
  --image-gc-high-threshold, down to --image-gc-low-threshold, never an image in use, pinned, the
  --pod-infra-container-image, or one younger than --minimum-image-ttl-duration; 100 turns the
  collection off. Images are collected at start, then every 5 minutes. The runtime's image
  filesystem is "/" here, so its real usage (1% or more on any disk) crosses a high threshold of 1.
  Dead containers are collected at start, then every minute, down to
  --maximum-dead-containers-per-container per container, none younger than
  --minimum-container-ttl-duration. The eviction thresholds are off: on a host whose disk is less
  than 15% free the default ones would reclaim images and dead containers themselves.

  Background:
    Given a container runtime
    And the runtime's script:
      """
      node:
        imageFs: {mountpoint: /}
        preloadImages: ["infra:1", "free:1", "pinned:1"]
      images:
      - {match: "pinned:*", size: 10Mi, pinned: true}
      - {match: "*:1", size: 10Mi}
      """

  @rule:orchlet.option.pod-infra-container-image.gc-exempt @rule:orchlet.option.image-gc-high-threshold.hundred-disables
  Scenario: Over the high threshold unused images go, but never --pod-infra-container-image or a pinned one
    When the agent runs with "--eviction-hard= --image-gc-high-threshold=1 --image-gc-low-threshold=0 --minimum-image-ttl-duration=0s --pod-infra-container-image=infra:1"
    Then the runtime no longer has the image "free:1"
    And the agent recorded a Warning event "FreeDiskSpaceFailed" about its node
    And the runtime still has the image "infra:1" after 1s
    And the runtime still has the image "pinned:1" after 0s

  @rule:orchlet.option.minimum-image-ttl-duration.age
  Scenario: An unused image younger than --minimum-image-ttl-duration stays
    When the agent runs with "--eviction-hard= --image-gc-high-threshold=1 --image-gc-low-threshold=0 --minimum-image-ttl-duration=2m"
    Then the agent recorded a Warning event "FreeDiskSpaceFailed" about its node
    And the runtime still has the image "free:1" after 1s
    And the runtime received no RemoveImage call

  @rule:orchlet.option.image-gc-high-threshold.hundred-disables
  Scenario: --image-gc-high-threshold=100 turns image garbage collection off
    When the agent runs with "--eviction-hard= --image-gc-high-threshold=100 --image-gc-low-threshold=0 --minimum-image-ttl-duration=0s"
    Then the runtime still has the image "free:1" after 2s
    And the runtime received no RemoveImage call
    And the agent recorded no event "FreeDiskSpaceFailed" about its node

  # Dead containers are collected at start and every minute: these scenarios wait for the
  # collection at 1m. The crasher exits at once and is restarted with crash-loop back-off: its
  # attempts 0 to 3 are dead by about 32s, attempt 4 only at about 72s.
  # Each waits a minute for the collection, so both wait side by side.
  @concurrent @rule:orchlet.option.maximum-dead-containers.retained
  Scenario: The collection keeps --maximum-dead-containers-per-container dead instances of a container
    Given the runtime's script:
      """
      containers:
      - {match: {name: crasher}, exit: {after: 0s, code: 1}}
      """
    And the manifest "crash.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: crash}
      spec:
        containers:
        - {name: crasher, image: "busybox:1.36"}
      """
    When the agent runs with "--eviction-hard= --root-dir={dir}/root --pod-manifest-path={manifests} --file-check-frequency=1s --maximum-dead-containers-per-container=2"
    # One dead instance over the limit is enough: an agent may cut back at each death, as
    # Kubernetes' kubelet does (its pod container deletor), rather than at the next collection.
    Then the runtime's exited containers "crasher" of pod "crash" go from 3 down to 2 within 75s

  @concurrent @rule:orchlet.option.minimum-container-ttl-duration.age
  Scenario: A dead container younger than --minimum-container-ttl-duration is not collected
    Given the runtime's script:
      """
      containers:
      - {match: {name: crasher}, exit: {after: 0s, code: 1}}
      """
    And the manifest "crash.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: crash}
      spec:
        containers:
        - {name: crasher, image: "busybox:1.36"}
      """
    When the agent runs with "--eviction-hard= --root-dir={dir}/root --pod-manifest-path={manifests} --file-check-frequency=1s --minimum-container-ttl-duration=45s"
    # At 1m only attempts 0 to 2 are 45s old: of them the newest stays, and attempt 3 with it.
    Then the runtime's exited containers "crasher" of pod "crash" go from 4 down to 2 within 75s
