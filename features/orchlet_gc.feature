@component:agent @component:runtime @component:agent-events
Feature: Node agent garbage collection
  The node agent deletes unused images when the image filesystem is at or above
  --image-gc-high-threshold, down to --image-gc-low-threshold, never an image in use, pinned, the
  --pod-infra-container-image, or one younger than --minimum-image-ttl-duration; 100 turns the
  collection off. Images are collected at start, then every 5 minutes. The runtime's image
  filesystem is "/" here, so its real usage (1% or more on any disk) crosses a high threshold of 1.

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
    When the agent runs with "--image-gc-high-threshold=1 --image-gc-low-threshold=0 --minimum-image-ttl-duration=0s --pod-infra-container-image=infra:1"
    Then the runtime no longer has the image "free:1"
    And the agent recorded a Warning event "FreeDiskSpaceFailed" about its node
    And the runtime still has the image "infra:1" after 1s
    And the runtime still has the image "pinned:1" after 0s

  @rule:orchlet.option.minimum-image-ttl-duration.age
  Scenario: An unused image younger than --minimum-image-ttl-duration stays
    When the agent runs with "--image-gc-high-threshold=1 --image-gc-low-threshold=0 --minimum-image-ttl-duration=2m"
    Then the agent recorded a Warning event "FreeDiskSpaceFailed" about its node
    And the runtime still has the image "free:1" after 1s
    And the runtime received no RemoveImage call

  @rule:orchlet.option.image-gc-high-threshold.hundred-disables
  Scenario: --image-gc-high-threshold=100 turns image garbage collection off
    When the agent runs with "--image-gc-high-threshold=100 --image-gc-low-threshold=0 --minimum-image-ttl-duration=0s"
    Then the runtime still has the image "free:1" after 2s
    And the runtime received no RemoveImage call
    And the agent recorded no event "FreeDiskSpaceFailed" about its node
