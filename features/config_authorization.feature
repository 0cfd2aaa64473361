@component:config-check
Feature: Authorization configuration
  AuthorizationConfiguration is the ordered list of authorizers; a Webhook authorizer says how to
  reach its webhook, how long to cache its answers, what to do when it fails, and which requests
  to send it.

  Scenario Outline: <change> is accepted
    Given a valid AuthorizationConfiguration file
    And its "<path>" is set to <value>
    When the configuration is checked
    Then it is accepted

    @rule:authz.valid
    Examples:
      | change                          | path                                        | value                                                                        |
      | a subdomain name                | authorizers[0].name                         | "webhook.authz.example"                                                      |
      | every cache field               | authorizers[0].webhook.authorizedTTL        | "10m"                                                                        |
      | caching turned off              | authorizers[0].webhook.cacheUnauthorizedRequests | false                                                                   |
      | a second webhook                | authorizers[1]                              | {"type": "Webhook", "name": "second", "webhook": {"timeout": "30s", "subjectAccessReviewVersion": "v1beta1", "matchConditionSubjectAccessReviewVersion": "v1", "failurePolicy": "NoOpinion", "connectionInfo": {"type": "KubeConfigFile", "kubeConfigFile": "{dir}/webhook.kubeconfig"}, "matchConditions": []}} |

    @rule:versioning.webhook.versions @rule:authz.webhook.sar-version.allowed
    Examples: SubjectAccessReview versions
      | change             | path                                              | value      |
      | version v1beta1    | authorizers[0].webhook.subjectAccessReviewVersion | "v1beta1"  |
      | version v1         | authorizers[0].webhook.subjectAccessReviewVersion | "v1"       |

    @rule:authz.webhook.failure-policy.allowed
    Examples: failure policies
      | change                 | path                                 | value         |
      | failurePolicy NoOpinion | authorizers[0].webhook.failurePolicy | "NoOpinion"   |
      | failurePolicy Deny     | authorizers[0].webhook.failurePolicy | "Deny"        |

    @rule:authz.webhook.timeout.max @rule:limits.webhook.timeout
    Examples: the longest timeout
      | change          | path                           | value  |
      | a 30s timeout   | authorizers[0].webhook.timeout | "30s"  |

  @rule:authz.webhook.match-conditions.max @rule:limits.webhook.match-conditions @rule:authz.valid
  Scenario: 64 match conditions are accepted
    Given a valid AuthorizationConfiguration file
    And its "authorizers[0].webhook.matchConditions" holds 64 copies of {"expression": "request.user != 'user-%d'"}, numbered
    When the configuration is checked
    Then it is accepted

  @rule:authz.webhook.match-conditions.max @rule:limits.webhook.match-conditions
  Scenario: 65 match conditions are refused
    Given a valid AuthorizationConfiguration file
    And its "authorizers[0].webhook.matchConditions" holds 65 copies of {"expression": "request.user != 'user-%d'"}, numbered
    When the configuration is checked
    Then it is refused at "authorizers[0].webhook.matchConditions"

  Scenario Outline: <mistake> is refused
    Given a valid AuthorizationConfiguration file
    And its "<path>" is set to <value>
    When the configuration is checked
    Then it is refused at "<where>"

    @rule:authz.authorizers.required
    Examples: at least one authorizer
      | mistake          | path        | value | where       |
      | no authorizers   | authorizers | []    | authorizers |

    @rule:authz.authorizer.type.required
    Examples: type required
      | mistake   | path                | value | where               |
      | no type   | authorizers[0].type | ""    | authorizers[0].type |

    @rule:authz.authorizer.type.supported
    Examples: supported types
      | mistake            | path                | value        | where               |
      | type Telepathy     | authorizers[0].type | "Telepathy"  | authorizers[0].type |

    @rule:authz.authorizer.name.required
    Examples: name required
      | mistake   | path                | value | where               |
      | no name   | authorizers[0].name | ""    | authorizers[0].name |

    @rule:authz.authorizer.name.dns
    Examples: names are DNS labels or subdomains
      | mistake               | path                | value          | where               |
      | an uppercase name     | authorizers[0].name | "Webhook"      | authorizers[0].name |
      | a name with a space   | authorizers[0].name | "my webhook"   | authorizers[0].name |

    @rule:orch.authz.authorizer.name.unique
    Examples: names are unique
      | mistake          | path           | value | where |
      | a repeated name  | authorizers[1] | {"type": "Webhook", "name": "webhook", "webhook": {"timeout": "3s", "subjectAccessReviewVersion": "v1", "matchConditionSubjectAccessReviewVersion": "v1", "failurePolicy": "Deny", "connectionInfo": {"type": "KubeConfigFile", "kubeConfigFile": "{dir}/webhook.kubeconfig"}, "matchConditions": []}} | authorizers[1].name |

    @rule:authz.authorizer.webhook.when-webhook
    Examples: webhook settings go with type Webhook
      | mistake                      | path           | value                                                                  | where                  |
      | a Webhook without settings   | authorizers[0] | {"type": "Webhook", "name": "webhook"}                                 | authorizers[0].webhook |
      | settings on another type     | authorizers[0] | {"type": "Node", "name": "node", "webhook": {"timeout": "3s"}}         | authorizers[0].webhook |

    @rule:orch.authz.webhook.ttl.non-negative
    Examples: TTLs are not negative
      | mistake                      | path                                   | value   | where                                  |
      | a negative authorized TTL    | authorizers[0].webhook.authorizedTTL   | "-1s"   | authorizers[0].webhook.authorizedTTL   |
      | a negative unauthorized TTL  | authorizers[0].webhook.unauthorizedTTL | "-1s"   | authorizers[0].webhook.unauthorizedTTL |

    @rule:authz.webhook.timeout.required
    Examples: timeout required
      | mistake       | path                           | value | where                          |
      | no timeout    | authorizers[0].webhook.timeout | "0s"  | authorizers[0].webhook.timeout |

    @rule:authz.webhook.timeout.max @rule:limits.webhook.timeout
    Examples: timeout at most 30s
      | mistake          | path                           | value   | where                          |
      | a 31s timeout    | authorizers[0].webhook.timeout | "31s"   | authorizers[0].webhook.timeout |

    @rule:orch.authz.webhook.timeout.positive
    Examples: timeout is positive
      | mistake              | path                           | value   | where                          |
      | a negative timeout   | authorizers[0].webhook.timeout | "-3s"   | authorizers[0].webhook.timeout |

    @rule:authz.webhook.sar-version.required
    Examples: SubjectAccessReview version required
      | mistake       | path                                              | value | where                                             |
      | no version    | authorizers[0].webhook.subjectAccessReviewVersion | ""    | authorizers[0].webhook.subjectAccessReviewVersion |

    @rule:authz.webhook.sar-version.allowed @rule:versioning.webhook.versions
    Examples: SubjectAccessReview versions allowed
      | mistake          | path                                              | value       | where                                             |
      | version v2       | authorizers[0].webhook.subjectAccessReviewVersion | "v2"        | authorizers[0].webhook.subjectAccessReviewVersion |

    @rule:authz.webhook.match-condition-sar-version.required
    Examples: match condition version required
      | mistake       | path                                                            | value | where                                                           |
      | no version    | authorizers[0].webhook.matchConditionSubjectAccessReviewVersion | ""    | authorizers[0].webhook.matchConditionSubjectAccessReviewVersion |

    @rule:authz.webhook.match-condition-sar-version.allowed @rule:versioning.webhook.versions
    Examples: match condition version is v1
      | mistake          | path                                                            | value       | where                                                           |
      | version v1beta1  | authorizers[0].webhook.matchConditionSubjectAccessReviewVersion | "v1beta1"   | authorizers[0].webhook.matchConditionSubjectAccessReviewVersion |

    @rule:authz.webhook.failure-policy.required
    Examples: failure policy required
      | mistake       | path                                 | value | where                                |
      | no policy     | authorizers[0].webhook.failurePolicy | ""    | authorizers[0].webhook.failurePolicy |

    @rule:authz.webhook.failure-policy.allowed
    Examples: failure policy values
      | mistake          | path                                 | value     | where                                |
      | policy Allow     | authorizers[0].webhook.failurePolicy | "Allow"   | authorizers[0].webhook.failurePolicy |

    @rule:authz.webhook.connection-info.type.required
    Examples: connection type required
      | mistake          | path                                   | value | where                                       |
      | no type          | authorizers[0].webhook.connectionInfo  | {"kubeConfigFile": "{dir}/webhook.kubeconfig"} | authorizers[0].webhook.connectionInfo.type |

    @rule:authz.webhook.connection-info.type.allowed
    Examples: connection types
      | mistake          | path                                       | value        | where                                      |
      | type Carrier     | authorizers[0].webhook.connectionInfo.type | "Carrier"    | authorizers[0].webhook.connectionInfo.type |

    @rule:authz.webhook.connection-info.in-cluster-refused
    Examples: the API server cannot call itself
      | mistake               | path                                  | value                          | where                                      |
      | InClusterConfig       | authorizers[0].webhook.connectionInfo | {"type": "InClusterConfig"}    | authorizers[0].webhook.connectionInfo.type |

    @rule:authz.webhook.connection-info.kubeconfig.required
    Examples: kubeConfigFile required
      | mistake              | path                                  | value                          | where                                                |
      | no kubeConfigFile    | authorizers[0].webhook.connectionInfo | {"type": "KubeConfigFile"}     | authorizers[0].webhook.connectionInfo.kubeConfigFile |

    @rule:orch.authz.webhook.connection-info.kubeconfig.readable
    Examples: kubeConfigFile is readable
      | mistake               | path                                                 | value                        | where                                                |
      | a missing file        | authorizers[0].webhook.connectionInfo.kubeConfigFile | "{dir}/missing.kubeconfig"   | authorizers[0].webhook.connectionInfo.kubeConfigFile |
      | a directory           | authorizers[0].webhook.connectionInfo.kubeConfigFile | "{dir}"                      | authorizers[0].webhook.connectionInfo.kubeConfigFile |

    @rule:authz.webhook.match-condition.expression.required
    Examples: match condition expression required
      | mistake          | path                                   | value                | where                                                |
      | no expression    | authorizers[0].webhook.matchConditions | [{"expression": ""}] | authorizers[0].webhook.matchConditions[0].expression |

    @rule:authz.webhook.match-condition.expression-bool
    Examples: match conditions are boolean CEL
      | mistake                   | path                                   | value                                  | where                                                |
      | a string condition        | authorizers[0].webhook.matchConditions | [{"expression": "request.user"}]       | authorizers[0].webhook.matchConditions[0].expression |
      | a condition that fails    | authorizers[0].webhook.matchConditions | [{"expression": "request.user =="}]    | authorizers[0].webhook.matchConditions[0].expression |

    @rule:orch.authz.webhook.match-condition.unique
    Examples: match conditions do not repeat
      | mistake               | path                                   | value                                                                                | where                                                |
      | a repeated condition  | authorizers[0].webhook.matchConditions | [{"expression": "request.user != 'a'"}, {"expression": "request.user != 'a'"}]       | authorizers[0].webhook.matchConditions[1].expression |
