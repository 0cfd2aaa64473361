// Package openapi serves the OpenAPI v2 and v3 documents of the resources orch-apiserver serves, as
// Kubernetes does at /openapi/v2 and /openapi/v3, so kubectl validates (through the fieldValidation
// parameter the documents advertise), explains and applies them as it does Kubernetes' own. The
// schemas are read off the Go types by reflection, following their JSON tags.
package openapi
