@component:apiserver
Feature: Event validation
  A new Event says when it was observed, what happened, why, of which type, and who reported it;
  the server refuses one that does not, naming every refused field, and keeps the fields it accepts.

  @rule:event.field.event-time.microseconds
  Scenario: eventTime keeps its microseconds
    Given the next event has "eventTime" set to "2026-11-22T10:11:12.123456Z"
    When I create the event "precise"
    Then the server answers 201
    And the event "precise" has "eventTime" equal to "2026-11-22T10:11:12.123456Z"

  Scenario Outline: a new Event without <field> is refused
    Given the next event has no "<field>"
    When I create the event "incomplete"
    Then the server answers 422
    And the refusal names the field "<field>"
    And the event "incomplete" does not exist

    @rule:event.field.event-time.required
    Examples: eventTime
      | field     |
      | eventTime |

    @rule:event.field.action.required
    Examples: action
      | field  |
      | action |

    @rule:event.field.reason.required
    Examples: reason
      | field  |
      | reason |

    @rule:event.field.type.required
    Examples: type
      | field |
      | type  |

    @rule:event.field.reporting-controller.required
    Examples: reportingController
      | field               |
      | reportingController |

    @rule:event.field.reporting-instance.required
    Examples: reportingInstance
      | field             |
      | reportingInstance |

  Scenario Outline: a new Event with an empty <field> is refused
    Given the next event has "<field>" set to ""
    When I create the event "empty"
    Then the server answers 422
    And the refusal names the field "<field>"

    @rule:event.field.action.required
    Examples: action
      | field  |
      | action |

    @rule:event.field.reason.required
    Examples: reason
      | field  |
      | reason |

    @rule:event.field.type.required
    Examples: type
      | field |
      | type  |

    @rule:event.field.reporting-controller.required
    Examples: reportingController
      | field               |
      | reportingController |

    @rule:event.field.reporting-instance.required
    Examples: reportingInstance
      | field             |
      | reportingInstance |

  Scenario Outline: <field> may have <limit> characters but not one more
    Given the next event has "<field>" set to <limit> characters
    When I create the event "at-limit"
    Then the server answers 201
    Given the next event has "<field>" set to <over> characters
    When I create the event "over-limit"
    Then the server answers 422
    And the refusal names the field "<field>"

    @rule:event.field.action.max-length @rule:limits.event.short-fields
    Examples: action
      | field  | limit | over |
      | action | 128   | 129  |

    @rule:event.field.reason.max-length @rule:limits.event.short-fields
    Examples: reason
      | field  | limit | over |
      | reason | 128   | 129  |

    @rule:event.field.reporting-instance.max-length @rule:limits.event.short-fields
    Examples: reportingInstance
      | field             | limit | over |
      | reportingInstance | 128   | 129  |

    @rule:event.field.note.max-length @rule:limits.event.note
    Examples: note
      | field | limit | over |
      | note  | 1024  | 1025 |

  Scenario Outline: type <type> is <outcome>
    Given the next event has "type" set to "<type>"
    When I create the event "typed"
    Then the server answers <code>

    @rule:event.field.type.normal-or-warning @rule:events.type-and-series
    Examples:
      | type    | outcome  | code |
      | Normal  | accepted | 201  |
      | Warning | accepted | 201  |
      | Info    | refused  | 422  |

  @rule:event.field.series.absent-for-single
  Scenario: a single event has no series
    When I create the event "once"
    Then the server answers 201
    And the answer has no "series"

  @rule:events.type-and-series
  Scenario: repeated occurrences fold into a series
    Given the next event has "series" set to {"count": 3, "lastObservedTime": "2026-11-22T10:11:12.000000Z"}
    When I create the event "repeated"
    Then the server answers 201
    And the event "repeated" has "series.count" equal to 3
    And the event "repeated" has "series.lastObservedTime" equal to "2026-11-22T10:11:12.000000Z"

  Scenario Outline: a series without <field> is refused
    Given the next event has "series" set to <series>
    When I create the event "bad-series"
    Then the server answers 422
    And the refusal names the field "series.<field>"

    @rule:event.field.series.count.required
    Examples: count
      | field | series                                                  |
      | count | {"lastObservedTime": "2026-11-22T10:11:12.000000Z"}     |

    @rule:event.field.series.last-observed-time.required
    Examples: lastObservedTime
      | field            | series        |
      | lastObservedTime | {"count": 2}  |

  @rule:orch.event.series.count.at-least-2
  Scenario: a series counts at least two occurrences
    Given the next event has "series" set to {"count": 1, "lastObservedTime": "2026-11-22T10:11:12.000000Z"}
    When I create the event "short-series"
    Then the server answers 422
    And the refusal names the field "series.count"

  @rule:event.field.regarding.kept @rule:event.field.related.kept
  Scenario: the regarding and related objects are kept
    Given the next event has "related" set to {"apiVersion": "v1", "kind": "Node", "name": "node-1"}
    When I create the event "about"
    Then the server answers 201
    And the event "about" has "regarding.name" equal to "web-1"
    And the event "about" has "regarding.kind" equal to "Pod"
    And the event "about" has "related.name" equal to "node-1"

  @rule:orch.event.regarding.namespace-matches
  Scenario: the regarding object may live in another namespace, as Kubernetes allows an event with eventTime
    Given the next event has "regarding.namespace" set to "somewhere-else"
    When I create the event "astray"
    Then the server answers 201
    And the event "astray" has "regarding.namespace" equal to "somewhere-else"

  Scenario Outline: the deprecated core-group field <field> is known, and left to the core group
    Given the next event has "<field>" set to <value>
    When I create the event "legacy"
    Then the server answers 422
    And the refusal names the field "<field>"

    @rule:event.field.deprecated.known @rule:versioning.event.deprecated-fields @rule:orch.event.deprecated.unset-on-create
    Examples:
      | field                    | value                                      |
      | deprecatedCount          | 4                                          |
      | deprecatedFirstTimestamp | "2026-11-22T09:00:00Z"                     |
      | deprecatedLastTimestamp  | "2026-11-22T10:00:00Z"                     |
      | deprecatedSource         | {"component": "orchlet", "host": "node-1"} |

  @rule:orch.event.errors.status-invalid
  Scenario: every refused field is named at once
    Given the next event has no "action"
    And the next event has "reason" set to 129 characters
    And the next event has "type" set to "Info"
    When I create the event "many-mistakes"
    Then the server answers 422
    And the answer is a Status
    And the answer's "reason" is "Invalid"
    And the refusal names the field "action"
    And the refusal names the field "reason"
    And the refusal names the field "type"
