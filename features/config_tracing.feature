@component:config-check
Feature: Tracing configuration
  TracingConfiguration says where the API server reports traces and how many spans it samples.

  @rule:tracing.valid
  Scenario: a file with neither endpoint nor sampling rate is accepted
    Given a valid TracingConfiguration file
    And its "endpoint" is removed
    And its "samplingRatePerMillion" is removed
    When the configuration is checked
    Then it is accepted

  Scenario Outline: endpoint <endpoint> is <outcome>
    Given a valid TracingConfiguration file
    And its "endpoint" is set to "<endpoint>"
    When the configuration is checked
    Then it is <outcome>

    @rule:tracing.endpoint.host-port @rule:tracing.valid
    Examples:
      | endpoint                  | outcome                  |
      | collector.example:4317    | accepted                 |
      | [::1]:4317                | accepted                 |
      | localhost                 | refused at "endpoint"    |
      | :4317                     | refused at "endpoint"    |
      | localhost:99999           | refused at "endpoint"    |

  Scenario Outline: samplingRatePerMillion <rate> is <outcome>
    Given a valid TracingConfiguration file
    And its "samplingRatePerMillion" is set to <rate>
    When the configuration is checked
    Then it is <outcome>

    @rule:tracing.sampling-rate.per-million
    Examples:
      | rate     | outcome                                |
      | 0        | accepted                               |
      | 1000000  | accepted                               |
      | -1       | refused at "samplingRatePerMillion"    |
      | 1000001  | refused at "samplingRatePerMillion"    |
