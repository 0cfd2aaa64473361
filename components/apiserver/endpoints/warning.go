package endpoints

import "net/http"

// AddWarning adds a Warning header (code 299) to the answer, as Kubernetes' warning.AddWarning.
func AddWarning(w http.ResponseWriter, text string) { addWarning(w, text) }
