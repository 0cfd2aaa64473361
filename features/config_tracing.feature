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

  @component:apiserver-start @rule:tracing.endpoint.default
  Scenario: without an endpoint the API server reports to the collector at localhost:4317
    Given an OTLP collector is listening on "127.0.0.1:4317"
    And a valid TracingConfiguration file
    And its "endpoint" is removed
    And its "samplingRatePerMillion" is set to 1000000
    When the API server is started with "--tracing-config-file={config}"
    And an anonymous request to "/healthz" is answered
    And the API server is stopped
    Then the collector received a request span "GET"

  @component:apiserver-start @rule:tracing.sampling-rate.parent-based
  Scenario: without a sampling rate only requests whose parent span is sampled are traced
    Given an OTLP collector is listening
    And a valid TracingConfiguration file
    And its "endpoint" is set to "{collector}"
    And its "samplingRatePerMillion" is removed
    When the API server is started with "--tracing-config-file={config}"
    And an anonymous request to "/healthz" is answered
    And the administrator requests "/healthz" with traceparent "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
    And the administrator requests "/healthz" with traceparent "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    And the API server is stopped
    Then the collector received a request span "GET" in trace "0af7651916cd43dd8448eb211c80319c", child of span "b7ad6b7169203331"
    And every span the collector received is in trace "0af7651916cd43dd8448eb211c80319c"
