@component:config-check
Feature: Admission configuration
  AdmissionConfiguration configures admission plugins by name, inline or through a file.

  @rule:admission.plugin.name.required
  Scenario: a plugin without a name is refused
    Given a valid AdmissionConfiguration file
    And its "plugins[0].name" is removed
    When the configuration is checked
    Then it is refused at "plugins[0].name"

  @rule:orch.admission.plugin.name.unique
  Scenario: a plugin configured twice is refused
    Given a valid AdmissionConfiguration file
    And its "plugins[1]" is set to {"name": "EventRateLimit"}
    When the configuration is checked
    Then it is refused at "plugins[1].name"

  Scenario Outline: a plugin configured through path <path> is <outcome>
    Given a valid AdmissionConfiguration file
    And its "plugins[0]" is set to {"name": "EventRateLimit", "path": "<path>"}
    When the configuration is checked
    Then it is <outcome>

    @rule:admission.plugin.path
    Examples:
      | path                        | outcome                          |
      | {dir}/webhook.kubeconfig    | accepted                         |
      | {dir}/no-such-file.yaml     | refused at "plugins[0].path"     |
      | {dir}                       | refused at "plugins[0].path"     |

  @rule:admission.plugin.configuration.over-path
  Scenario: an inline configuration is used instead of path
    Given a valid AdmissionConfiguration file
    And its "plugins[0].path" is set to "{dir}/no-such-file.yaml"
    When the configuration is checked
    Then it is accepted

  @component:apiserver-start @rule:admission.plugin.name.registered
  Scenario: a plugin the server has not registered is refused when it starts
    Given a valid AdmissionConfiguration file
    And its "plugins[0]" is set to {"name": "NoSuchPlugin"}
    When the API server is started with "--admission-control-config-file={config}"
    Then the API server refuses to start naming "plugins[0].name"
