@component:config-check
Feature: Authentication configuration
  AuthenticationConfiguration lists JWT authenticators, each trusting one issuer and mapping its
  tokens' claims to a user, and may allow anonymous requests on some paths.

  Scenario Outline: <change> is accepted
    Given a valid AuthenticationConfiguration file
    And its "<path>" is set to <value>
    When the configuration is checked
    Then it is accepted

    @rule:authn.valid
    Examples: complete files
      | change                          | path                                   | value                                                                                                         |
      | a username expression           | jwt[0].claimMappings.username          | {"expression": "'user:' + claims.sub"}                                                                        |
      | a second authenticator          | jwt[1]                                 | {"issuer": {"url": "https://other.example.com", "audiences": ["a"]}, "claimMappings": {"username": {"claim": "sub", "prefix": "other:"}}} |
      | groups, uid and extra mappings  | jwt[0].claimMappings                   | {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}, "uid": {"claim": "sub"}, "extra": [{"key": "example.com/team", "valueExpression": "claims.team"}]} |
      | anonymous access on a path      | anonymous                              | {"enabled": true, "conditions": [{"path": "/livez"}, {"path": "/readyz"}]}                                    |
      | anonymous access turned off     | anonymous                              | {"enabled": false}                                                                                            |
      | a user validation rule          | jwt[0].userValidationRules             | [{"expression": "!user.username.startsWith('system:')", "message": "reserved"}]                              |

    @rule:authn.jwt.issuer.audience-match-policy.multiple
    Examples: audience policies
      | change                                   | path                    | value                                                          |
      | one audience with MatchAny               | jwt[0].issuer           | {"url": "https://issuer.example.com", "audiences": ["a"], "audienceMatchPolicy": "MatchAny"}      |
      | several audiences with MatchAny          | jwt[0].issuer           | {"url": "https://issuer.example.com", "audiences": ["a", "b"], "audienceMatchPolicy": "MatchAny"} |

    @rule:authn.jwt.issuer.egress-selector.allowed
    Examples: egress selectors
      | change                  | path                              | value           |
      | egress controlplane     | jwt[0].issuer.egressSelectorType  | "controlplane"  |
      | egress cluster          | jwt[0].issuer.egressSelectorType  | "cluster"       |

    @rule:authn.jwt.claim-mappings.username.email-verified
    Examples: email with email_verified
      | change                                       | path                          | value                                                                                                    |
      | email_verified in the username expression    | jwt[0].claimMappings.username | {"expression": "claims.email_verified ? claims.email : ''"}                                              |
      | email_verified in a claim validation rule    | jwt[0]                        | {"issuer": {"url": "https://issuer.example.com", "audiences": ["a"]}, "claimValidationRules": [{"expression": "claims.email_verified == true"}], "claimMappings": {"username": {"expression": "claims.email"}}} |

  Scenario Outline: <mistake> is refused
    Given a valid AuthenticationConfiguration file
    And its "<path>" is set to <value>
    When the configuration is checked
    Then it is refused at "<where>"

    @rule:authn.jwt.issuer.url.unique
    Examples: issuer URLs are unique
      | mistake                     | path   | value                                                                                                                      | where             |
      | a second authenticator with the same URL | jwt[1] | {"issuer": {"url": "https://issuer.example.com", "audiences": ["b"]}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}} | jwt[1].issuer.url |

    @rule:authn.jwt.issuer.url.required
    Examples: issuer URL required
      | mistake        | path              | value | where             |
      | an empty URL   | jwt[0].issuer.url | ""    | jwt[0].issuer.url |

    @rule:authn.jwt.issuer.url.https
    Examples: issuer URL form
      | mistake              | path              | value                                 | where             |
      | an http URL          | jwt[0].issuer.url | "http://issuer.example.com"           | jwt[0].issuer.url |
      | a URL without host   | jwt[0].issuer.url | "https://"                            | jwt[0].issuer.url |
      | a URL with user info | jwt[0].issuer.url | "https://me@issuer.example.com"       | jwt[0].issuer.url |
      | a URL with a query   | jwt[0].issuer.url | "https://issuer.example.com/?a=b"     | jwt[0].issuer.url |
      | a URL with fragment  | jwt[0].issuer.url | "https://issuer.example.com/#f"       | jwt[0].issuer.url |

    @rule:authn.jwt.issuer.discovery-url.differs
    Examples: discovery URL differs from URL
      | mistake                      | path                       | value                          | where                      |
      | a discovery URL equal to url | jwt[0].issuer.discoveryURL | "https://issuer.example.com"   | jwt[0].issuer.discoveryURL |

    @rule:authn.jwt.issuer.discovery-url.unique
    Examples: discovery URLs are unique
      | mistake                           | path   | value | where |
      | two authenticators sharing one    | jwt    | [{"issuer": {"url": "https://a.example.com", "discoveryURL": "https://d.example.com/.well-known/openid-configuration", "audiences": ["a"]}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}, {"issuer": {"url": "https://b.example.com", "discoveryURL": "https://d.example.com/.well-known/openid-configuration", "audiences": ["a"]}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}] | jwt[1].issuer.discoveryURL |

    @rule:orch.authn.jwt.issuer.discovery-url.https
    Examples: discovery URL is https
      | mistake                 | path                       | value                                                      | where                      |
      | an http discovery URL   | jwt[0].issuer.discoveryURL | "http://d.example.com/.well-known/openid-configuration"    | jwt[0].issuer.discoveryURL |

    @rule:authn.jwt.issuer.certificate-authority.pem
    Examples: certificate authority is PEM
      | mistake       | path                               | value             | where                              |
      | a non-PEM CA  | jwt[0].issuer.certificateAuthority | "not a PEM block" | jwt[0].issuer.certificateAuthority |

    @rule:authn.jwt.issuer.audiences.required
    Examples: audiences required
      | mistake          | path                    | value | where                   |
      | no audiences     | jwt[0].issuer.audiences | []    | jwt[0].issuer.audiences |

    @rule:orch.authn.jwt.issuer.audiences.valid
    Examples: audiences are valid
      | mistake                 | path                    | value            | where                      |
      | an empty audience       | jwt[0].issuer.audiences | ["a", ""]        | jwt[0].issuer.audiences[1] |
      | a duplicated audience   | jwt[0].issuer.audiences | ["a", "a"]       | jwt[0].issuer.audiences[1] |

    @rule:authn.jwt.issuer.audience-match-policy.allowed
    Examples: audience match policy values
      | mistake             | path                              | value        | where                             |
      | policy MatchAll     | jwt[0].issuer.audienceMatchPolicy | "MatchAll"   | jwt[0].issuer.audienceMatchPolicy |

    @rule:authn.jwt.issuer.audience-match-policy.multiple
    Examples: several audiences need MatchAny
      | mistake                          | path          | value                                                         | where                             |
      | several audiences without policy | jwt[0].issuer | {"url": "https://issuer.example.com", "audiences": ["a", "b"]} | jwt[0].issuer.audienceMatchPolicy |

    @rule:authn.jwt.issuer.egress-selector.allowed
    Examples: egress selector values
      | mistake          | path                             | value     | where                            |
      | egress "etcd"    | jwt[0].issuer.egressSelectorType | "etcd"    | jwt[0].issuer.egressSelectorType |

    @rule:authn.jwt.claim-validation.claim-exclusive
    Examples: claim rules are claim or expression
      | mistake                          | path                           | value                                                        | where                                      |
      | claim with expression            | jwt[0].claimValidationRules    | [{"claim": "hd", "expression": "claims.hd == 'x'"}]          | jwt[0].claimValidationRules[0]             |
      | requiredValue with expression    | jwt[0].claimValidationRules    | [{"requiredValue": "x", "expression": "claims.hd == 'x'"}]   | jwt[0].claimValidationRules[0].requiredValue |
      | claim with message               | jwt[0].claimValidationRules    | [{"claim": "hd", "message": "wrong domain"}]                 | jwt[0].claimValidationRules[0].message     |

    @rule:authn.jwt.claim-validation.expression-bool
    Examples: claim rule expressions are boolean CEL
      | mistake                      | path                         | value                                  | where                                     |
      | a string expression          | jwt[0].claimValidationRules  | [{"expression": "'hd'"}]               | jwt[0].claimValidationRules[0].expression |
      | an expression that fails     | jwt[0].claimValidationRules  | [{"expression": "claims.hd =="}]       | jwt[0].claimValidationRules[0].expression |

    @rule:orch.authn.jwt.claim-validation.required-value-needs-claim
    Examples: requiredValue needs claim
      | mistake                  | path                         | value                       | where                                  |
      | requiredValue alone      | jwt[0].claimValidationRules  | [{"requiredValue": "x"}]    | jwt[0].claimValidationRules[0]         |

    @rule:orch.authn.jwt.claim-validation.unique
    Examples: claim rules do not repeat
      | mistake           | path                         | value                                    | where                                |
      | a repeated claim  | jwt[0].claimValidationRules  | [{"claim": "hd"}, {"claim": "hd"}]       | jwt[0].claimValidationRules[1].claim |

    @rule:authn.jwt.claim-mappings.username.required
    Examples: username required
      | mistake          | path                          | value | where                         |
      | no username      | jwt[0].claimMappings.username | {}    | jwt[0].claimMappings.username |

    @rule:authn.jwt.claim-mappings.username.exclusive
    Examples: username is claim or expression
      | mistake                       | path                          | value                                                    | where                                    |
      | claim with expression         | jwt[0].claimMappings.username | {"claim": "sub", "prefix": "", "expression": "claims.sub"} | jwt[0].claimMappings.username            |

    @rule:authn.jwt.claim-mappings.username.prefix-required
    Examples: username prefix required with claim
      | mistake                | path                          | value              | where                                |
      | claim without prefix   | jwt[0].claimMappings.username | {"claim": "sub"}   | jwt[0].claimMappings.username.prefix |

    @rule:authn.jwt.claim-mappings.username.exclusive
    Examples: username prefix is exclusive with expression
      | mistake                     | path                          | value                                          | where                                 |
      | prefix with expression      | jwt[0].claimMappings.username | {"prefix": "x:", "expression": "claims.sub"}   | jwt[0].claimMappings.username.prefix  |

    @rule:authn.jwt.claim-mappings.username.expression-string
    Examples: username expression is a string
      | mistake                    | path                          | value                          | where                                    |
      | a list expression          | jwt[0].claimMappings.username | {"expression": "[claims.sub]"} | jwt[0].claimMappings.username.expression |

    @rule:authn.jwt.claim-mappings.username.email-verified
    Examples: email without email_verified
      | mistake                             | path                          | value                          | where                                    |
      | email without email_verified        | jwt[0].claimMappings.username | {"expression": "claims.email"} | jwt[0].claimMappings.username.expression |

    @rule:authn.jwt.claim-mappings.groups.exclusive
    Examples: groups is claim or expression
      | mistake                   | path                        | value                                                         | where                                  |
      | claim with expression     | jwt[0].claimMappings.groups | {"claim": "groups", "prefix": "", "expression": "claims.groups"} | jwt[0].claimMappings.groups            |

    @rule:authn.jwt.claim-mappings.groups.prefix-required
    Examples: groups prefix required with claim
      | mistake                | path                        | value                | where                              |
      | claim without prefix   | jwt[0].claimMappings.groups | {"claim": "groups"}  | jwt[0].claimMappings.groups.prefix |

    @rule:authn.jwt.claim-mappings.groups.expression-type
    Examples: groups expression type
      | mistake                | path                        | value                          | where                                  |
      | a number expression    | jwt[0].claimMappings.groups | {"expression": "1 + 2"}        | jwt[0].claimMappings.groups.expression |

    @rule:authn.jwt.claim-mappings.uid.exactly-one
    Examples: uid is exactly one of claim and expression
      | mistake                 | path                     | value                                        | where                            |
      | claim and expression    | jwt[0].claimMappings.uid | {"claim": "sub", "expression": "claims.sub"} | jwt[0].claimMappings.uid         |
      | neither                 | jwt[0].claimMappings.uid | {}                                           | jwt[0].claimMappings.uid         |

    @rule:authn.jwt.claim-mappings.uid.expression-string
    Examples: uid expression is a string
      | mistake                | path                     | value                     | where                               |
      | a boolean expression   | jwt[0].claimMappings.uid | {"expression": "true"}    | jwt[0].claimMappings.uid.expression |

    @rule:authn.jwt.claim-mappings.extra.key.required
    Examples: extra key required
      | mistake       | path                       | value                                      | where                            |
      | no key        | jwt[0].claimMappings.extra | [{"valueExpression": "claims.sub"}]        | jwt[0].claimMappings.extra[0].key |

    @rule:authn.jwt.claim-mappings.extra.key.domain-path
    Examples: extra keys are domain-prefixed paths
      | mistake                  | path                       | value                                                         | where                             |
      | no domain                | jwt[0].claimMappings.extra | [{"key": "team", "valueExpression": "claims.sub"}]            | jwt[0].claimMappings.extra[0].key |
      | a bad domain             | jwt[0].claimMappings.extra | [{"key": "-bad-.example.com/team", "valueExpression": "claims.sub"}] | jwt[0].claimMappings.extra[0].key |
      | a bad path               | jwt[0].claimMappings.extra | [{"key": "example.com/te am", "valueExpression": "claims.sub"}] | jwt[0].claimMappings.extra[0].key |

    @rule:authn.jwt.claim-mappings.extra.key.lowercase
    Examples: extra keys are lowercase
      | mistake            | path                       | value                                                         | where                             |
      | an uppercase key   | jwt[0].claimMappings.extra | [{"key": "example.com/Team", "valueExpression": "claims.sub"}] | jwt[0].claimMappings.extra[0].key |

    @rule:authn.jwt.claim-mappings.extra.key.unique
    Examples: extra keys are unique
      | mistake        | path                       | value                                                                                                       | where                             |
      | a repeated key | jwt[0].claimMappings.extra | [{"key": "example.com/team", "valueExpression": "claims.sub"}, {"key": "example.com/team", "valueExpression": "claims.sub"}] | jwt[0].claimMappings.extra[1].key |

    @rule:orch.authn.jwt.claim-mappings.extra.key.reserved
    Examples: extra keys avoid the orch.io domains
      | mistake          | path                       | value                                                         | where                             |
      | an orch.io key   | jwt[0].claimMappings.extra | [{"key": "orch.io/team", "valueExpression": "claims.sub"}]    | jwt[0].claimMappings.extra[0].key |

    @rule:authn.jwt.claim-mappings.extra.value-expression.required
    Examples: extra valueExpression required
      | mistake               | path                       | value                           | where                                         |
      | no valueExpression    | jwt[0].claimMappings.extra | [{"key": "example.com/team"}]   | jwt[0].claimMappings.extra[0].valueExpression |

    @rule:authn.jwt.claim-mappings.extra.value-expression.type
    Examples: extra valueExpression type
      | mistake                | path                       | value                                                  | where                                         |
      | a number expression    | jwt[0].claimMappings.extra | [{"key": "example.com/team", "valueExpression": "1"}]  | jwt[0].claimMappings.extra[0].valueExpression |

    @rule:authn.jwt.user-validation.expression.required
    Examples: user rule expression required
      | mistake         | path                        | value                      | where                                    |
      | no expression   | jwt[0].userValidationRules  | [{"message": "no"}]        | jwt[0].userValidationRules[0].expression |

    @rule:authn.jwt.user-validation.expression-bool
    Examples: user rule expressions are boolean CEL over user
      | mistake                  | path                        | value                                  | where                                    |
      | a string expression      | jwt[0].userValidationRules  | [{"expression": "user.username"}]      | jwt[0].userValidationRules[0].expression |
      | an unknown user field    | jwt[0].userValidationRules  | [{"expression": "user.nickname == ''"}] | jwt[0].userValidationRules[0].expression |

    @rule:orch.authn.jwt.user-validation.unique
    Examples: user rules do not repeat
      | mistake                | path                        | value                                                                   | where                                    |
      | a repeated expression  | jwt[0].userValidationRules  | [{"expression": "user.uid != ''"}, {"expression": "user.uid != ''"}]    | jwt[0].userValidationRules[1].expression |

    @rule:authn.anonymous.conditions.path.required
    Examples: anonymous condition path required
      | mistake          | path      | value                                                | where                          |
      | an empty path    | anonymous | {"enabled": true, "conditions": [{"path": ""}]}      | anonymous.conditions[0].path   |

    @rule:orch.authn.anonymous.conditions.path.unique
    Examples: anonymous condition paths are unique
      | mistake           | path      | value                                                                  | where                        |
      | a repeated path   | anonymous | {"enabled": true, "conditions": [{"path": "/livez"}, {"path": "/livez"}]} | anonymous.conditions[1].path |

    @rule:orch.authn.anonymous.conditions.only-when-enabled
    Examples: anonymous conditions need anonymous on
      | mistake                    | path      | value                                                       | where                |
      | conditions while disabled  | anonymous | {"enabled": false, "conditions": [{"path": "/livez"}]}      | anonymous.conditions |

  @component:apiserver-start @rule:authn.anonymous.flag-conflict
  Scenario: --anonymous-auth may not be set beside an anonymous section
    Given a valid AuthenticationConfiguration file
    And its "jwt" is set to []
    And its "anonymous" is set to {"enabled": true, "conditions": [{"path": "/livez"}]}
    When the API server is started with "--authentication-config={config} --anonymous-auth=false"
    Then the API server refuses to start naming "--anonymous-auth"

  @component:apiserver-start @rule:authn.anonymous.conditions.restrict
  Scenario: anonymous access is allowed only on the paths of its conditions
    Given a valid AuthenticationConfiguration file
    And its "jwt" is set to []
    And its "anonymous" is set to {"enabled": true, "conditions": [{"path": "/livez"}]}
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    Then an anonymous request to "/livez" is answered
    And an anonymous request to "/readyz" is refused
