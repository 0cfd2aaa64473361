// Package admission is orch-apiserver's admission: the one interface every plugin implements, as
// k8s.io/apiserver's pkg/admission has it, and the chain that runs the plugins in Kubernetes'
// order. A mutating plugin (Admit) may change or refuse a create before the object is validated,
// and refuse an update once the update's own rules hold; a validating plugin (Validate) judges
// either once the object passed validation, before it is stored. A plugin may also judge a request
// by its path alone, before its body is read (AdmitRequest). The plugins are the subpackages.
package admission
