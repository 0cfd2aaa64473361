@component:apiserver-start
Feature: JWT authenticators of a started API server
  An API server started with --authentication-config verifies bearer tokens against the OpenID
  Connect providers its JWT authenticators trust: keys found through discovery, claims checked
  and mapped to a user. A refused token is answered 401; the reason is in the server's log.

  Background:
    Given an OIDC provider "a"
    And an AuthenticationConfiguration trusting "a"

  @rule:authn.jwt.token.discovery
  Scenario: a token is verified with the key the issuer publishes through discovery
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {}
    Then the server answers 200
    When I list events with a token from "a" signed with a key it does not publish
    Then the server answers 401
    And the API server logs "failed to verify"

  @rule:authn.jwt.order
  Scenario: each authenticator in the list is asked in turn, the one of the token's issuer answering
    Given an OIDC provider "b"
    And it also trusts "b"
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And the JWT authenticator for "b" is initialized
    Then a token from "a" with claims {} authenticates as {"username": "a:alice", "groups": ["system:authenticated"]}
    And a token from "b" with claims {} authenticates as {"username": "b:alice", "groups": ["system:authenticated"]}
    When I list events with a token for "b" signed by "a"
    Then the server answers 401
    And the API server logs "failed to verify"

  @rule:authn.jwt.token.minimum-claims
  Scenario Outline: a token without <claim> is refused
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {}
    Then the server answers 200
    When I list events with a token from "a" with claims {"<claim>": null}
    Then the server answers 401
    And the API server logs "<reason>"

    Examples:
      | claim | reason                             |
      | aud   | expected audience                  |
      | exp   | token is expired                   |
      | sub   | claim not present                  |

  @rule:authn.jwt.token.minimum-claims
  Scenario: a token without iss belongs to no authenticator
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"iss": null}
    Then the server answers 401

  @rule:authn.jwt.issuer.url.matches-iss
  Scenario: a token whose iss differs from issuer.url is not the authenticator's
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"iss": "https://elsewhere.example.com"}
    Then the server answers 401

  @rule:authn.jwt.issuer.url.matches-iss
  Scenario: a discovery document naming another issuer is refused
    Given the provider "a" reports the issuer "https://elsewhere.example.com"
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    Then the JWT authenticator for "a" does not initialize, logging "issuer did not match the issuer returned by provider"
    When I list events with a token from "a" with claims {}
    Then the server answers 401

  @rule:authn.jwt.issuer.discovery-url.default
  Scenario: discovery is read from the well-known path of the issuer URL
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    Then the provider "a" served discovery at "/.well-known/openid-configuration" only

  @rule:authn.jwt.issuer.discovery-url.default
  Scenario: discovery is read from discoveryURL when it is set
    Given its "jwt[0].issuer.discoveryURL" is set to "{issuer:a}/custom-discovery"
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {}
    Then the server answers 200
    And the provider "a" served discovery at "/custom-discovery" only

  @rule:authn.jwt.issuer.audience-match-policy.any
  Scenario Outline: under MatchAny a token with audiences <aud> is accepted
    Given its "jwt[0].issuer.audiences" is set to ["conformance", "other"]
    And its "jwt[0].issuer.audienceMatchPolicy" is set to "MatchAny"
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"aud": <aud>}
    Then the server answers 200

    Examples:
      | aud                        |
      | ["other"]                  |
      | ["third", "conformance"]   |
      | "other"                    |

  @rule:authn.jwt.issuer.audience-match-policy.any
  Scenario Outline: under MatchAny a token with audiences <aud> is refused
    Given its "jwt[0].issuer.audiences" is set to ["conformance", "other"]
    And its "jwt[0].issuer.audienceMatchPolicy" is set to "MatchAny"
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"aud": <aud>}
    Then the server answers 401
    And the API server logs "expected audience"

    Examples:
      | aud                        |
      | ["third"]                  |
      | ["third", "fourth"]        |

  @rule:authn.jwt.claim-validation.required-value-empty
  Scenario: a claim rule without requiredValue accepts the claim empty
    Given its "jwt[0].claimValidationRules" is set to [{"claim": "hd"}]
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"hd": ""}
    Then the server answers 200
    And a token from "a" with claims {"hd": ""} authenticates as {"username": "a:alice", "groups": ["system:authenticated"]}

  @rule:authn.jwt.claim-validation.required-value-empty
  Scenario Outline: a claim rule without requiredValue refuses the claim <value>
    Given its "jwt[0].claimValidationRules" is set to [{"claim": "hd"}]
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"hd": <claim>}
    Then the server answers 401
    And the API server logs "<logged>"

    Examples:
      | value       | claim      | logged                                   |
      | set         | "example"  | required claim hd value does not match   |
      | absent      | null       | required claim hd not present            |

  @rule:authn.jwt.claim-mappings.absent-values
  Scenario Outline: <value> maps to <mapped>
    Given its "jwt[0].claimMappings" is set to {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}, "extra": [{"key": "example.com/team", "valueExpression": "has(claims.team) ? claims.team : ''"}]}
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    Then a token from "a" with claims <claims> authenticates as <user>

    Examples:
      | value                          | mapped                        | claims                                  | user                                                                                                 |
      | an empty groups string         | no group                      | {"groups": ""}                          | {"username": "alice", "groups": ["system:authenticated"]}                                           |
      | an empty groups array          | no group                      | {"groups": []}                          | {"username": "alice", "groups": ["system:authenticated"]}                                           |
      | a null groups claim            | no group                      | {"groups": null}                        | {"username": "alice", "groups": ["system:authenticated"]}                                           |
      | empty strings in groups        | only the other groups         | {"groups": ["", "dev", ""]}             | {"username": "alice", "groups": ["dev", "system:authenticated"]}                                    |
      | an empty extra string          | no extra attribute            | {"team": ""}                            | {"username": "alice", "groups": ["system:authenticated"]}                                           |
      | an empty extra array           | no extra attribute            | {"team": []}                            | {"username": "alice", "groups": ["system:authenticated"]}                                           |
      | a null extra value             | no extra attribute            | {"team": null}                          | {"username": "alice", "groups": ["system:authenticated"]}                                           |
      | empty strings in an extra list | only the other values         | {"team": ["", "red"]}                   | {"username": "alice", "groups": ["system:authenticated"], "extra": {"example.com/team": ["red"]}}   |

  @rule:authn.jwt.user-validation.all-true
  Scenario: user validation rules: a user for whom every rule holds is accepted
    Given its "jwt[0].claimMappings" is set to {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}}
    And its "jwt[0].userValidationRules" is set to [{"expression": "!user.username.startsWith('system:')", "message": "username must not use the system: prefix"}, {"expression": "'dev' in user.groups", "message": "user must be in the dev group"}]
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"sub": "alice", "groups": ["dev"]}
    Then the server answers 200
    And a token from "a" with claims {"sub": "alice", "groups": ["dev"]} authenticates as {"username": "alice", "groups": ["dev", "system:authenticated"]}

  @rule:authn.jwt.user-validation.all-true @rule:errors.authn.rule-message
  Scenario Outline: user validation rules: <case>
    Given its "jwt[0].claimMappings" is set to {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}}
    And its "jwt[0].userValidationRules" is set to [{"expression": "!user.username.startsWith('system:')", "message": "username must not use the system: prefix"}, {"expression": "'dev' in user.groups", "message": "user must be in the dev group"}]
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims <claims>
    Then the server answers 401
    And the API server logs "<logged>"

    Examples:
      | case               | claims                                        | logged                                   |
      | the first fails    | {"sub": "system:alice", "groups": ["dev"]}    | username must not use the system: prefix |
      | the second fails   | {"sub": "alice", "groups": ["ops"]}           | user must be in the dev group            |

  @rule:errors.authn.rule-message
  Scenario Outline: a failing <kind> rule is logged with its message
    Given its "jwt[0].claimMappings" is set to {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}}
    And its "<path>" is set to [{"expression": "<expression>", "message": "<message>"}]
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"sub": "system:alice", "groups": ["ops"]}
    Then the server answers 401
    And the API server logs "<message>"

    Examples:
      | kind             | path                        | expression                                    | message                                 |
      | user validation  | jwt[0].userValidationRules  | 'dev' in user.groups                          | user must be in the dev group           |
      | claim validation | jwt[0].claimValidationRules | !claims.sub.startsWith('system:')             | subject must not use the system: prefix |

  @rule:authn.jwt.claim-mappings.claim-types
  Scenario Outline: a <claim> claim holding <value> is accepted
    Given its "jwt[0].claimMappings" is set to {"username": {"claim": "username", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}, "uid": {"claim": "uid"}}
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"username": "alice", "uid": "u-1", "<claim>": <json>}
    Then the server answers 200

    Examples:
      | claim    | value          | json             |
      | username | a string       | "alice"          |
      | uid      | a string       | "u-2"            |
      | groups   | a string       | "dev"            |
      | groups   | a string array | ["dev", "ops"]   |

  @rule:authn.jwt.claim-mappings.claim-types
  Scenario Outline: a <claim> claim holding <value> is refused
    Given its "jwt[0].claimMappings" is set to {"username": {"claim": "username", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}, "uid": {"claim": "uid"}}
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {"username": "alice", "uid": "u-1", "<claim>": <json>}
    Then the server answers 401
    And the API server logs "parse <claim> claim"

    Examples:
      | claim    | value          | json             |
      | username | a number       | 42               |
      | username | an array       | ["alice"]        |
      | uid      | an array       | ["u-2"]          |
      | groups   | a number       | 7                |
      | groups   | an object      | {"a": "b"}       |

  @rule:authn.jwt.claim-mappings.claim-types
  Scenario: a groups string is one group
    Given its "jwt[0].claimMappings" is set to {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}}
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    Then a token from "a" with claims {"groups": "dev"} authenticates as {"username": "alice", "groups": ["dev", "system:authenticated"]}

  @rule:authn.jwt.issuer.certificate-authority.used
  Scenario: certificateAuthority is trusted for discovery
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    And the JWT authenticator for "a" is initialized
    And I list events with a token from "a" with claims {}
    Then the server answers 200

  @rule:authn.jwt.issuer.certificate-authority.used
  Scenario: without certificateAuthority the system's roots do not trust the provider
    Given its "jwt[0].issuer.certificateAuthority" is removed
    When the API server is started with "--authentication-config={config} --authorization-mode=AlwaysAllow"
    Then the JWT authenticator for "a" does not initialize, logging "certificate signed by unknown authority"
    When I list events with a token from "a" with claims {}
    Then the server answers 401
