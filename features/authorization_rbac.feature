@component:apiserver-start
Feature: RBAC authorization
  An API server started with --authorization-mode=RBAC allows a request when one of the roles bound
  to its user (by name, a group or a service account) has a rule matching its API group, resource,
  subresource, name and verb; everything else is forbidden. Roles and bindings are objects of the
  API, and nobody grants through them what they do not hold. The scenarios' users are "alice" and
  "bob"; the administrator is in system:masters.

  Background:
    Given a token file with the users "alice", "bob"
    And the API server is started with "--token-auth-file={dir}/tokens.csv --authorization-mode=RBAC --anonymous-auth=false"

  @rule:orch.rbac.bootstrap-policy
  Scenario Outline: the default cluster role <role> is there from the start
    When the administrator sends GET "/apis/{rbac}/v1/clusterroles/<role>"
    Then they are answered 200

    Examples:
      | role                      |
      | cluster-admin             |
      | admin                     |
      | edit                      |
      | view                      |
      | system:discovery          |
      | system:basic-user         |
      | system:public-info-viewer |
      | system:node               |
      | system:node-bootstrapper  |

  @rule:orch.rbac.bootstrap-policy
  Scenario: every authenticated user may discover the API and ask about their own access
    When the administrator sends GET "/apis/{rbac}/v1/clusterrolebindings/system:basic-user"
    Then they are answered 200
    And within 10 seconds "alice" is answered 200 to GET "/apis"
    And within 10 seconds "alice" is answered 200 to GET "/version"
    And within 10 seconds "alice" is answered 403 to GET "/api/v1/namespaces/{ns}/pods"

  @rule:orch.rbac.binding-grants-role
  Scenario: a role binding grants its role's rules in its namespace, and only there
    When the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: pod-reader}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [get, list]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: alice-reads-pods}
      roleRef: {apiGroup: {rbac}, kind: Role, name: pod-reader}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: alice}
      """
    Then they are answered 201
    And within 10 seconds "alice" is answered 200 to GET "/api/v1/namespaces/{ns}/pods"
    And within 10 seconds "alice" is answered 403 to GET "/api/v1/namespaces/kube-system/pods"
    And within 10 seconds "alice" is answered 403 to GET "/api/v1/namespaces/{ns}/configmaps"
    And within 10 seconds "bob" is answered 403 to GET "/api/v1/namespaces/{ns}/pods"
    When the administrator sends DELETE "/apis/{rbac}/v1/namespaces/{ns}/rolebindings/alice-reads-pods"
    Then within 10 seconds "alice" is answered 403 to GET "/api/v1/namespaces/{ns}/pods"

  @rule:orch.rbac.subresources @rule:orch.rbac.self-subject-access-review
  Scenario Outline: a rule on <granted> allows <verb> <asked>: <answer>
    When the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: granted}
      rules:
      - {apiGroups: [""], resources: ["<granted>"], verbs: [get, create]}
      - {apiGroups: [""], resources: [configmaps], verbs: [list]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: granted}
      roleRef: {apiGroup: {rbac}, kind: Role, name: granted}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: bob}
      """
    And within 10 seconds "bob" is answered 200 to GET "/api/v1/namespaces/{ns}/configmaps"
    Then asked by a SelfSubjectAccessReview, "bob" may <verb> "<asked>": <answer>

    Examples:
      | granted  | verb   | asked     | answer |
      | pods     | get    | pods      | yes    |
      | pods     | delete | pods      | no     |
      | pods     | get    | pods/log  | no     |
      | pods     | create | pods/exec | no     |
      | pods/log | get    | pods/log  | yes    |
      | pods/log | get    | pods      | no     |
      | pods/log | create | pods/exec | no     |
      | */exec   | create | pods/exec | yes    |
      | */exec   | get    | pods/log  | no     |
      | *        | create | pods/exec | yes    |

  @rule:orch.rbac.escalation
  Scenario: a user who may create roles and bindings grants only what they hold
    When the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: role-manager}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [get, list]}
      - {apiGroups: [{rbac}], resources: [roles, rolebindings], verbs: [create]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: bob-manages-roles}
      roleRef: {apiGroup: {rbac}, kind: Role, name: role-manager}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: bob}
      """
    And within 10 seconds "bob" is answered 200 to GET "/api/v1/namespaces/{ns}/pods"
    And "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: reader}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [get]}
      """
    Then they are answered 201
    When "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: deleter}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [delete]}
      """
    Then they are answered 403
    And the answer's text contains "is attempting to grant RBAC permissions not currently held"
    When "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: log-reader}
      rules:
      - {apiGroups: [""], resources: [pods/log], verbs: [get]}
      """
    Then they are answered 403
    When the administrator sends POST "/apis/{rbac}/v1/clusterroles" with:
      """
      apiVersion: {rbac}/v1
      kind: ClusterRole
      metadata: {name: secret-reader}
      rules:
      - {apiGroups: [""], resources: [secrets], verbs: [get, list]}
      """
    And "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: bob-reads-secrets}
      roleRef: {apiGroup: {rbac}, kind: ClusterRole, name: secret-reader}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: bob}
      """
    Then they are answered 403
    When "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: alice-reads}
      roleRef: {apiGroup: {rbac}, kind: Role, name: reader}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: alice}
      """
    Then they are answered 201

  @rule:orch.rbac.escalation
  Scenario: the bind and escalate verbs let a user grant what they do not hold
    When the administrator sends POST "/apis/{rbac}/v1/clusterroles" with:
      """
      apiVersion: {rbac}/v1
      kind: ClusterRole
      metadata: {name: secret-reader}
      rules:
      - {apiGroups: [""], resources: [secrets], verbs: [get, list]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/clusterroles" with:
      """
      apiVersion: {rbac}/v1
      kind: ClusterRole
      metadata: {name: pod-deleter}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [delete]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: delegate}
      rules:
      - {apiGroups: [""], resources: [configmaps], verbs: [list]}
      - {apiGroups: [{rbac}], resources: [roles, rolebindings], verbs: [create]}
      - {apiGroups: [{rbac}], resources: [clusterroles], verbs: [bind], resourceNames: [secret-reader]}
      - {apiGroups: [{rbac}], resources: [roles], verbs: [escalate]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: bob-delegates}
      roleRef: {apiGroup: {rbac}, kind: Role, name: delegate}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: bob}
      """
    And within 10 seconds "bob" is answered 200 to GET "/api/v1/namespaces/{ns}/configmaps"
    And "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: alice-reads-secrets}
      roleRef: {apiGroup: {rbac}, kind: ClusterRole, name: secret-reader}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: alice}
      """
    Then they are answered 201
    When "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: anything}
      rules:
      - {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
      """
    Then they are answered 201
    When "bob" sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: alice-deletes-pods}
      roleRef: {apiGroup: {rbac}, kind: ClusterRole, name: pod-deleter}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: alice}
      """
    Then they are answered 403

  @rule:orch.rbac.aggregation
  Scenario: a cluster role labelled to aggregate to view is gathered into view, edit and admin
    When the administrator sends POST "/apis/{rbac}/v1/clusterroles" with:
      """
      apiVersion: {rbac}/v1
      kind: ClusterRole
      metadata:
        name: widgets-viewer
        labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
      rules:
      - {apiGroups: [example.com], resources: [widgets], verbs: [get, list]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: alice-views}
      roleRef: {apiGroup: {rbac}, kind: ClusterRole, name: view}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: alice}
      """
    Then within 10 seconds "alice" is answered 200 to GET "/api/v1/namespaces/{ns}/pods"
    And asked by a SelfSubjectAccessReview, "alice" may get "pods/log": yes
    And asked by a SelfSubjectAccessReview, "alice" may get "secrets": no
    And within 10 seconds the cluster role "admin" has a rule on "widgets"

  @rule:orch.rbac.self-subject-rules-review
  Scenario: a user lists what they may do in a namespace
    When the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: pod-reader}
      rules:
      - {apiGroups: [""], resources: [pods, pods/log], verbs: [get, list]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: alice-reads-pods}
      roleRef: {apiGroup: {rbac}, kind: Role, name: pod-reader}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: alice}
      """
    And within 10 seconds "alice" is answered 200 to GET "/api/v1/namespaces/{ns}/pods"
    And "alice" sends POST "/apis/{authz}/v1/selfsubjectrulesreviews" with:
      """
      apiVersion: {authz}/v1
      kind: SelfSubjectRulesReview
      spec: {namespace: {ns}}
      """
    Then they are answered 201
    And the answer's text contains "pods/log"
    And the answer's text contains "selfsubjectaccessreviews"
    And the answer's text contains "/healthz"
    And the answer's text does not contain "secrets"

  @rule:orch.rbac.local-subject-access-review
  Scenario: a user who may review access in a namespace asks what a user may do there, and only there
    When the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: {rbac}/v1
      kind: Role
      metadata: {name: pod-admin}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [list, delete]}
      - {apiGroups: [{authz}], resources: [localsubjectaccessreviews], verbs: [create]}
      """
    And the administrator sends POST "/apis/{rbac}/v1/namespaces/{ns}/rolebindings" with:
      """
      apiVersion: {rbac}/v1
      kind: RoleBinding
      metadata: {name: alice-pod-admin}
      roleRef: {apiGroup: {rbac}, kind: Role, name: pod-admin}
      subjects:
      - {apiGroup: {rbac}, kind: User, name: alice}
      """
    Then within 10 seconds "alice" is answered 200 to GET "/api/v1/namespaces/{ns}/pods"
    When "alice" sends POST "/apis/{authz}/v1/namespaces/{ns}/localsubjectaccessreviews" with:
      """
      apiVersion: {authz}/v1
      kind: LocalSubjectAccessReview
      spec:
        user: bob
        resourceAttributes: {namespace: {ns}, verb: list, resource: pods}
      """
    Then they are answered 201
    And the answer's text contains "LocalSubjectAccessReview"
    And the review's answer is "not allowed"
    When "alice" sends POST "/apis/{authz}/v1/namespaces/{ns}/localsubjectaccessreviews" with:
      """
      apiVersion: {authz}/v1
      kind: LocalSubjectAccessReview
      spec:
        user: alice
        resourceAttributes: {namespace: {ns}, verb: delete, resource: pods}
      """
    Then they are answered 201
    And the review's answer is "allowed"
    When "alice" sends POST "/apis/{authz}/v1/namespaces/{ns}/localsubjectaccessreviews" with:
      """
      apiVersion: {authz}/v1
      kind: LocalSubjectAccessReview
      spec:
        user: bob
        resourceAttributes: {namespace: elsewhere, verb: list, resource: pods}
      """
    Then they are answered 422
    And the answer's text contains "spec.resourceAttributes.namespace"
    And the answer's text contains "must match metadata.namespace"
    When "alice" sends POST "/apis/{authz}/v1/namespaces/{ns}/localsubjectaccessreviews" with:
      """
      apiVersion: {authz}/v1
      kind: LocalSubjectAccessReview
      spec:
        user: bob
        nonResourceAttributes: {verb: get, path: /healthz}
      """
    Then they are answered 422
    And the answer's text contains "disallowed on this kind of request"
    When "alice" sends POST "/apis/{authz}/v1/namespaces/elsewhere/localsubjectaccessreviews" with:
      """
      apiVersion: {authz}/v1
      kind: LocalSubjectAccessReview
      spec:
        user: bob
        resourceAttributes: {namespace: elsewhere, verb: list, resource: pods}
      """
    Then they are answered 403
    When "bob" sends POST "/apis/{authz}/v1/namespaces/{ns}/localsubjectaccessreviews" with:
      """
      apiVersion: {authz}/v1
      kind: LocalSubjectAccessReview
      spec:
        user: bob
        resourceAttributes: {namespace: {ns}, verb: list, resource: pods}
      """
    Then they are answered 403

  @rule:orch.rbac.self-subject-review
  Scenario: every authenticated user may ask who the server takes them for
    When "alice" sends POST "/apis/{authn}/v1/selfsubjectreviews" with:
      """
      apiVersion: {authn}/v1
      kind: SelfSubjectReview
      """
    Then they are answered 201
    And the answer's text contains "SelfSubjectReview"
    And the review's user is "alice" with uid "alice-uid" in the group "system:authenticated"

  @rule:orch.rbac.validation
  Scenario Outline: a <kind> that breaks Kubernetes' rules is refused naming <field>
    When the administrator sends POST "/apis/{rbac}/v1/<path>" with:
      """
      <body>
      """
    Then they are answered 422
    And the answer's text contains "<field>"

    Examples:
      | kind               | path                             | field                   | body                                                                                                                  |
      | Role               | namespaces/{ns}/roles            | rules[0].verbs          | {"apiVersion":"{rbac}/v1","kind":"Role","metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["pods"]}]}     |
      | Role               | namespaces/{ns}/roles            | rules[0].nonResourceURLs | {"apiVersion":"{rbac}/v1","kind":"Role","metadata":{"name":"r"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]} |
      | RoleBinding        | namespaces/{ns}/rolebindings     | roleRef.kind            | {"apiVersion":"{rbac}/v1","kind":"RoleBinding","metadata":{"name":"b"},"roleRef":{"apiGroup":"{rbac}","kind":"Secret","name":"x"}} |
      | ClusterRoleBinding | clusterrolebindings              | subjects[0].namespace   | {"apiVersion":"{rbac}/v1","kind":"ClusterRoleBinding","metadata":{"name":"b"},"roleRef":{"apiGroup":"{rbac}","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"robot"}]} |

  @rule:orch.rbac.kubernetes-group-names
  Scenario: roles written under Kubernetes' group names are the same objects
    When the administrator sends POST "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles" with:
      """
      apiVersion: rbac.authorization.k8s.io/v1
      kind: Role
      metadata: {name: same}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [get]}
      """
    Then they are answered 201
    And the answer's text contains "rbac.authorization.k8s.io/v1"
    When the administrator sends GET "/apis/{rbac}/v1/namespaces/{ns}/roles/same"
    Then they are answered 200
    And the answer's text contains "{rbac}/v1"
    When "alice" sends POST "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" with:
      """
      apiVersion: authorization.k8s.io/v1
      kind: SelfSubjectAccessReview
      spec:
        nonResourceAttributes: {verb: get, path: /version}
      """
    Then they are answered 201
    And the answer's text contains "true"
