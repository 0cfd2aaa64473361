// Package validation holds the rules an events.orch.io/v1 Event must pass on create and on update.
//
// The rules, their messages and their order follow Kubernetes' own Event validation
// (ValidateEventCreate / ValidateEventUpdate / legacyValidateEvent for events.k8s.io/v1), so a 422
// from orch-apiserver reads like one from Kubernetes. Where orch differs on purpose the difference is
// written next to the rule; in short:
//
//   - Field paths name the field the user sent (note, deprecatedCount, deprecatedSource,
//     deprecatedFirstTimestamp, deprecatedLastTimestamp, regarding.namespace), not Kubernetes'
//     internal names (message, count, source, firstTimestamp, lastTimestamp, involvedObject.namespace).
//   - One cause per broken rule: an empty reportingController is reported as Required only (Kubernetes
//     adds two qualified-name causes for the same empty string), a bad namespace only at
//     metadata.namespace (Kubernetes adds a second cause at "namespace"), an empty type as Required,
//     and an update reports every changed immutable field once (Kubernetes reports reason twice).
//   - Every create rule is checked whether or not eventTime is set (Kubernetes skips the
//     reportingController / reportingInstance / action / reason / note rules when eventTime is
//     missing), so an event with five mistakes reports five causes.
//   - On update the create rules are ratcheted: they apply to the fields that changed, never to a
//     value the store already holds (see ValidateUpdate).
package validation
