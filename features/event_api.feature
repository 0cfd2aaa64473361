@component:apiserver
Feature: Event API operations
  Controllers record what happened in the cluster as Events in events.orch.io/v1. Every operation
  of the Event resource answers with its success code, and 401 to a request without valid
  credentials.

  @rule:event.op.create @rule:errors.event.success-codes @rule:events.create-and-watch
  Scenario: a controller records an event
    When I create the event "pulled"
    Then the server answers one of 200, 201 or 202
    And the answer is an Event
    And the answer names the event "pulled"

  @rule:event.op.get @rule:errors.event.success-codes
  Scenario: a recorded event can be read back
    Given an event "pulled" exists
    When I get the event "pulled"
    Then the server answers 200
    And the answer is an Event
    And the answer's "reason" is "Started"

  @rule:event.op.list-namespaced @rule:errors.event.success-codes @rule:service.event.namespaced @rule:event.list.items
  Scenario: events are listed per namespace
    Given an event "here" exists
    And an event "elsewhere" exists in the other namespace
    When I list events
    Then the server answers 200
    And the answer is an EventList
    And the answer lists the event "here"
    And the answer lists no event "elsewhere"

  @rule:event.op.list-all @rule:errors.event.success-codes @rule:service.event.namespaced
  Scenario: events are listed across all namespaces
    Given an event "here" exists
    And an event "elsewhere" exists in the other namespace
    When I list events across namespaces
    Then the server answers 200
    And the answer is an EventList
    And the answer lists the events "here", "elsewhere"

  @rule:event.list.items
  Scenario: an empty list still carries its items
    When I list events with query "fieldSelector=metadata.name%3Dnothing-has-this-name"
    Then the server answers 200
    And the answer's "items" is []

  @rule:event.op.update @rule:errors.event.success-codes
  Scenario: an event is replaced
    Given an event "pulled" exists
    When I update the event "pulled"
    Then the server answers one of 200 or 201
    And the event "pulled" has "series.count" equal to 2

  @rule:event.op.patch @rule:errors.event.success-codes
  Scenario: an event is patched
    Given an event "pulled" exists
    When I patch the event "pulled"
    Then the server answers one of 200 or 201
    And the event "pulled" has "series.count" equal to 5

  @rule:event.op.delete @rule:errors.event.success-codes
  Scenario: an event is deleted
    Given an event "pulled" exists
    When I delete the event "pulled"
    Then the server answers one of 200 or 202
    And the event "pulled" does not exist

  @rule:event.op.deletecollection @rule:errors.event.success-codes
  Scenario: the events of a namespace are deleted together
    Given an event "first" exists in the other namespace
    And an event "second" exists in the other namespace
    And an event "kept" exists
    When I delete the collection of events in the other namespace
    Then the server answers 200
    And the event "first" does not exist in the other namespace
    And the event "second" does not exist in the other namespace
    And the event "kept" exists

  Scenario Outline: <operation> answers 401 without valid credentials
    Given an event "guarded" exists
    And <client>
    When I <operation>
    Then the server answers 401
    And the answer is a Status
    And the event "guarded" exists

    @rule:event.op.get.unauthorized @rule:errors.event.unauthorized
    Examples: get
      | operation                  | client                                 |
      | get the event "guarded"    | a client without credentials           |
      | get the event "guarded"    | a client with an unknown bearer token  |

    @rule:event.op.list-namespaced.unauthorized @rule:errors.event.unauthorized
    Examples: list
      | operation   | client                                |
      | list events | a client without credentials          |
      | list events | a client with an unknown bearer token |

    @rule:event.op.list-all.unauthorized @rule:errors.event.unauthorized
    Examples: list across namespaces
      | operation                      | client                                |
      | list events across namespaces  | a client without credentials          |
      | list events across namespaces  | a client with an unknown bearer token |

    @rule:event.op.create.unauthorized @rule:errors.event.unauthorized
    Examples: create
      | operation                 | client                                |
      | create the event "other"  | a client without credentials          |
      | create the event "other"  | a client with an unknown bearer token |

    @rule:event.op.update.unauthorized @rule:errors.event.unauthorized
    Examples: update
      | operation                  | client                                |
      | update the event "guarded" | a client without credentials          |
      | update the event "guarded" | a client with an unknown bearer token |

    @rule:event.op.patch.unauthorized @rule:errors.event.unauthorized
    Examples: patch
      | operation                 | client                                |
      | patch the event "guarded" | a client without credentials          |
      | patch the event "guarded" | a client with an unknown bearer token |

    @rule:event.op.delete.unauthorized @rule:errors.event.unauthorized
    Examples: delete
      | operation                  | client                                |
      | delete the event "guarded" | a client without credentials          |
      | delete the event "guarded" | a client with an unknown bearer token |

    @rule:event.op.deletecollection.unauthorized @rule:errors.event.unauthorized
    Examples: deletecollection
      | operation                           | client                                |
      | delete the collection of events     | a client without credentials          |
      | delete the collection of events     | a client with an unknown bearer token |

  Scenario Outline: a dry run of <operation> changes nothing
    Given an event "kept" exists
    When I <operation> with query "dryRun=All"
    Then the server answers one of <codes>
    And the event "kept" exists
    And the event "kept" has no "series"

    @rule:event.op.dry-run
    Examples:
      | operation               | codes            |
      | update the event "kept" | 200 or 201       |
      | patch the event "kept"  | 200 or 201       |
      | delete the event "kept" | 200 or 202       |

  @rule:event.op.dry-run
  Scenario: a dry-run create stores nothing
    When I create the event "imagined" with query "dryRun=All"
    Then the server answers one of 200, 201 or 202
    And the event "imagined" does not exist

  @rule:event.op.dry-run
  Scenario: a dry-run delete of the collection deletes nothing
    Given an event "kept" exists in the other namespace
    When I delete the collection of events in the other namespace with query "dryRun=All"
    Then the server answers 200
    And the event "kept" exists in the other namespace

  Scenario Outline: pretty output on <operation>
    Given an event "shown" exists
    When I <operation> with query "pretty=true"
    Then the server answers one of <codes>
    And the answer is indented

    @rule:event.op.pretty
    Examples:
      | operation                          | codes            |
      | get the event "shown"              | 200              |
      | list events                        | 200              |
      | list events across namespaces      | 200              |
      | create the event "another"         | 200, 201 or 202  |
      | update the event "shown"           | 200 or 201       |
      | patch the event "shown"            | 200 or 201       |
      | delete the event "shown"           | 200 or 202       |

  @rule:versioning.event.group-version @rule:orch.event.op.discovery
  Scenario: the Event API is served in its group-version
    When I read the API group
    Then the server answers 200
    And the answer names the Event API's group-version
    And the API group lists the resource "events" as namespaced with verbs "create, delete, deletecollection, get, list, patch, update, watch"

  @component:apiserver-start @rule:service.event.limited-time
  Scenario: events are kept for a limited time
    Given the API server is started with "--event-ttl=2s --anonymous-auth=false"
    When an event "short-lived" exists
    Then the event "short-lived" is gone within 30 seconds
