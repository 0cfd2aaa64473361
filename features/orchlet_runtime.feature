@component:agent @component:runtime
Feature: Node agent runtime client
  The node agent reaches the CRI runtime with every request bounded by --runtime-request-timeout,
  pulls images through --image-service-endpoint (the runtime's endpoint by default) and, under
  --serialize-image-pulls, one image at a time (without it, side by side).

  Background:
    Given a container runtime

  @rule:errors.agent.runtime-request-timeout
  Scenario: A runtime request that outlives --runtime-request-timeout is cancelled, reported and retried
    Given the runtime's script:
      """
      faults:
      - {method: CreateContainer, times: 1, hang: true}
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
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --runtime-request-timeout=2s"
    Then the runtime cancelled the CreateContainer call after 2s
    And the agent's output reports the CreateContainer failure
    And the runtime runs the container "app" of pod "web"

  @rule:orchlet.option.image-service-endpoint.defaults-to-runtime
  Scenario: Without --image-service-endpoint images are pulled through the runtime's endpoint
    Given manifests for 1 pod named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s"
    Then the agent reports pod "p-1" Running
    And the runtime received PullImage calls

  @rule:orchlet.option.image-service-endpoint.separate
  Scenario: With --image-service-endpoint images are pulled through it
    Given a second container runtime as the image service
    And the runtime's script:
      """
      node: {preloadImages: ["conformance/p-1:1"]}
      """
    And manifests for 1 pod named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --image-service-endpoint={images}"
    Then the agent reports pod "p-1" Running
    And the image service received PullImage calls
    And the runtime received no PullImage call

  @rule:orchlet.option.serialize-image-pulls.one-at-a-time
  Scenario: With --serialize-image-pulls images are pulled one at a time
    Given the runtime's script:
      """
      images:
      - {match: "conformance/*", pullDuration: 300ms}
      """
    And manifests for 3 pods named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --serialize-image-pulls=true"
    Then the agent reports 3 pods Running and 0 rejected with "OutOfpods"
    And the runtime's PullImage calls never overlap

  @rule:orchlet.option.serialize-image-pulls.parallel
  Scenario: With --serialize-image-pulls=false images are pulled side by side
    Given the runtime's script:
      """
      images:
      - {match: "conformance/*", pullDuration: 2s}
      """
    And manifests for 3 pods named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --serialize-image-pulls=false"
    Then the agent reports 3 pods Running and 0 rejected with "OutOfpods"
    And all the runtime's PullImage calls overlap

  @rule:orchlet.option.registry-qps.rate
  Scenario Outline: Image pulls start a --registry-burst at once, then one per 1/--registry-qps
    Given manifests for 4 pods named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --registry-qps=2 --registry-burst=<burst>"
    Then the agent reports 4 pods Running and 0 rejected with "OutOfpods"
    And the runtime's PullImage calls start <burst> at once, then one every 500ms

    Examples:
      | burst |
      | 1     |
      | 2     |

  @rule:orchlet.option.registry-qps.rate @rule:limits.agent.registry-qps-zero
  Scenario: With --registry-qps 0 image pulls are not limited, whatever --registry-burst
    Given the runtime's script:
      """
      images:
      - {match: "conformance/*", pullDuration: 1s}
      """
    And manifests for 4 pods named "p"
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --registry-qps=0 --registry-burst=1 --serialize-image-pulls=false"
    Then the agent reports 4 pods Running and 0 rejected with "OutOfpods"
    And all the runtime's PullImage calls overlap
