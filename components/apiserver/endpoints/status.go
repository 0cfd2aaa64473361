package endpoints

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var statusTypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}

// ErrorStatus turns any error into the Status a client is answered with; an error that is not
// already a Status is an internal error.
func ErrorStatus(err error) *metav1.Status {
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		apiStatus = apierrors.NewInternalError(err)
	}
	status := apiStatus.Status()
	status.TypeMeta = statusTypeMeta
	status.Status = metav1.StatusFailure
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	return &status
}

// WriteError answers r with err as a Status.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status := ErrorStatus(err)
	// A client asking for protobuf gets its errors so too, except the answer that its Accept
	// names nothing the resource is served in.
	if mediaType, ok := negotiateProtobuf(r); ok && status.Code != http.StatusNotAcceptable {
		writeProtobuf(w, int(status.Code), mediaType, status)
		return
	}
	WriteObject(w, r, int(status.Code), status)
}

func successStatus(details *metav1.StatusDetails) *metav1.Status {
	return &metav1.Status{TypeMeta: statusTypeMeta, Status: metav1.StatusSuccess, Details: details}
}
