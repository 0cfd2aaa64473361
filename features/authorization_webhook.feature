@component:apiserver-start
Feature: Webhook authorization
  An API server started with an AuthorizationConfiguration asks its webhook about requests as
  SubjectAccessReviews: its match conditions choose the requests it is asked about, its answers are
  cached, and its failure policy says what a failed call means. The webhook here allows every
  request that is not for a resource, so the server can be seen to start.

  Background:
    Given a valid AuthorizationConfiguration file

  @rule:authz.webhook.match-conditions.empty-matches-all
  Scenario: a webhook without match conditions is asked about every request
    Given its webhook is a SubjectAccessReview server answering "allowed"
    And its "authorizers[0].webhook.matchConditions" is set to []
    When the API server is started with "--authorization-config={config} --anonymous-auth=false"
    And I list events
    And I list events in the other namespace
    Then the server answers 200
    And the webhook was asked about events 2 times

  @rule:authz.webhook.match-logic
  Scenario Outline: match conditions: <outcome>
    Given its webhook is a SubjectAccessReview server answering "denied"
    And its "authorizers[0].webhook.failurePolicy" is set to "<policy>"
    And its "authorizers[0].webhook.matchConditions" is set to [{"expression": "has(request.resourceAttributes)"}, {"expression": "<condition>"}]
    And its "authorizers[1]" is set to {"type": "AlwaysAllow", "name": "alwaysallow"}
    When the API server is started with "--authorization-config={config} --anonymous-auth=false"
    And I list events
    Then the server answers <code>
    And the webhook was asked about events <asked> times

    Examples:
      | outcome                                    | policy    | condition                                  | code | asked |
      | all true, the webhook is asked             | Deny      | request.resourceAttributes.verb == 'list'  | 403  | 1     |
      | one false, the webhook is skipped          | Deny      | request.resourceAttributes.verb != 'list'  | 200  | 0     |
      | an error under Deny rejects the request    | Deny      | request.extra['absent'][0] == 'x'          | 500  | 0     |
      | an error under NoOpinion skips the webhook | NoOpinion | request.extra['absent'][0] == 'x'          | 200  | 0     |

  @rule:errors.authz.failure-policy
  Scenario Outline: a webhook that <failure> under failurePolicy <policy>
    Given its webhook is a SubjectAccessReview server answering "allowed"
    And its "authorizers[0].webhook.failurePolicy" is set to "<policy>"
    And its "authorizers[0].webhook.timeout" is set to "1s"
    And its "authorizers[1]" is set to {"type": "AlwaysAllow", "name": "alwaysallow"}
    When the API server is started with "--authorization-config={config} --anonymous-auth=false"
    And the webhook <failure>
    And I list events
    Then the server answers <code>

    Examples: Deny rejects the request
      | failure                   | policy | code |
      | goes down                 | Deny   | 500  |
      | answers malformed JSON    | Deny   | 500  |
      | answers after the timeout | Deny   | 500  |

    Examples: NoOpinion passes it to the next authorizer
      | failure                   | policy    | code |
      | goes down                 | NoOpinion | 200  |
      | answers malformed JSON    | NoOpinion | 200  |
      | answers after the timeout | NoOpinion | 200  |

  @concurrent @rule:authz.webhook.cache
  Scenario: answers are cached for their own TTLs
    Given its webhook is a SubjectAccessReview server answering "allowed"
    And the webhook answers "denied" in the other namespace
    And its "authorizers[0].webhook.authorizedTTL" is set to "6s"
    And its "authorizers[0].webhook.unauthorizedTTL" is set to "2s"
    When the API server is started with "--authorization-config={config} --anonymous-auth=false"
    And I list events
    And I list events in the other namespace
    And I list events
    And I list events in the other namespace
    Then the webhook was asked about events 2 times
    When 3 seconds pass
    And I list events
    And I list events in the other namespace
    Then the webhook was asked about events 3 times
    When 4 seconds pass
    And I list events
    Then the webhook was asked about events 4 times

  @concurrent @rule:authz.webhook.cache
  Scenario: nothing is cached when caching is turned off
    Given its webhook is a SubjectAccessReview server answering "allowed"
    And the webhook answers "denied" in the other namespace
    And its "authorizers[0].webhook.cacheAuthorizedRequests" is set to false
    And its "authorizers[0].webhook.cacheUnauthorizedRequests" is set to false
    When the API server is started with "--authorization-config={config} --anonymous-auth=false"
    And I list events
    And I list events
    And I list events in the other namespace
    And I list events in the other namespace
    Then the webhook was asked about events 4 times

  @concurrent @rule:authz.webhook.ttl.defaults
  Scenario: by default every answer is cached, others than allowed ones for 30s
    Given its webhook is a SubjectAccessReview server answering "allowed"
    And the webhook answers "no opinion" in the other namespace
    And its "authorizers[1]" is set to {"type": "AlwaysAllow", "name": "alwaysallow"}
    When the API server is started with "--authorization-config={config} --anonymous-auth=false"
    And I list events
    And I list events in the other namespace
    Then the webhook was asked about events 2 times
    When 25 seconds pass
    And I list events
    And I list events in the other namespace
    Then the webhook was asked about events 2 times
    When 6 seconds pass
    And I list events
    And I list events in the other namespace
    Then the webhook was asked about events 3 times
