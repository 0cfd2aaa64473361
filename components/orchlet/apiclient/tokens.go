package apiclient

import (
	"context"
	"encoding/json"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenRequestAPIVersion is the group version of orch's TokenRequest: Kubernetes'
// authentication.k8s.io/v1, renamed, which client-go's typed CreateToken would not send.
const tokenRequestAPIVersion = "authentication.orch.io/v1"

// CreateToken asks for a token of the service account namespace/name (serviceaccounts/<name>/token).
func (o Objects) CreateToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	req := tr.DeepCopy()
	req.TypeMeta = metav1.TypeMeta{APIVersion: tokenRequestAPIVersion, Kind: "TokenRequest"}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	raw, err := o.Client.RESTClient().Post().
		Namespace(namespace).Resource("serviceaccounts").Name(name).SubResource("token").
		SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").
		Body(body).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	out := &authenticationv1.TokenRequest{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("decoding the TokenRequest of serviceaccount %s/%s: %w", namespace, name, err)
	}
	return out, nil
}
