@component:config-check
Feature: Configuration files of the API server
  The API server reads admission, authentication, authorization, encryption-at-rest and tracing
  configuration files of group-version apiserver.config.orch.io/v1. A file is checked before it is
  used: a valid one is accepted, and every mistake of an invalid one is reported as "path: reason".

  @rule:service.apiserver.reads-config-kinds
  Scenario Outline: a valid <kind> file is accepted
    Given a valid <kind> file
    When the configuration is checked
    Then it is accepted

    Examples:
      | kind                            |
      | AdmissionConfiguration          |
      | AuthenticationConfiguration     |
      | AuthorizationConfiguration      |
      | EncryptionConfiguration         |
      | TracingConfiguration            |

  @rule:config.kind.api-version @rule:versioning.config.group-version
  Scenario Outline: a file of apiVersion <apiVersion> is refused
    Given a valid TracingConfiguration file
    And its "apiVersion" is set to "<apiVersion>"
    When the configuration is checked
    Then it is refused at "apiVersion"

    Examples:
      | apiVersion                    |
      | apiserver.config.orch.io/v2   |
      | apiserver.config.k8s.io/v1    |
      | v1                            |

  @rule:config.kind.kind @rule:versioning.config.group-version
  Scenario Outline: a file of kind <kind> is refused
    Given a valid TracingConfiguration file
    And its "kind" is set to "<kind>"
    When the configuration is checked
    Then it is refused at "kind"

    Examples:
      | kind              |
      | TracingConfig     |
      | Event             |

  @rule:orch.config.strict-decoding
  Scenario: an unknown field is refused
    Given a valid TracingConfiguration file
    And its "samplingRate" is set to 5
    When the configuration is checked
    Then it is refused at "samplingRate"

  @rule:orch.config.strict-decoding
  Scenario: a value of the wrong type is refused
    Given a valid TracingConfiguration file
    And its "samplingRatePerMillion" is set to "many"
    When the configuration is checked
    Then it is refused mentioning "samplingRatePerMillion"

  @rule:orch.config.strict-decoding
  Scenario: a key given twice is refused
    Given a configuration file:
      """
      apiVersion: {apiVersion}
      kind: TracingConfiguration
      endpoint: localhost:4317
      endpoint: collector:4317
      """
    When the configuration is checked
    Then it is refused at "endpoint"

  @rule:orch.config.all-problems
  Scenario: every mistake of a file is reported
    Given a valid AuthorizationConfiguration file
    And its "authorizers[0].name" is set to "Not A Name"
    And its "authorizers[0].webhook.timeout" is set to "45s"
    And its "authorizers[0].webhook.failurePolicy" is set to "Maybe"
    When the configuration is checked
    Then it is refused at "authorizers[0].name"
    And it is refused at "authorizers[0].webhook.timeout"
    And it is refused at "authorizers[0].webhook.failurePolicy"
