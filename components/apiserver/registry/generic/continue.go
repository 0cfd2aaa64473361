package generic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// continueToken is Kubernetes' encoding, so tokens look and behave the same: the snapshot revision
// and the key, relative to the list prefix, at which the next page starts.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

// EncodeContinue makes the token of a page that ends before startKey in the snapshot at revision.
func EncodeContinue(startKey, listPrefix string, revision int64) (string, error) {
	data, err := json.Marshal(continueToken{
		APIVersion:      continueTokenVersion,
		ResourceVersion: revision,
		StartKey:        strings.TrimPrefix(startKey, listPrefix),
	})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(data), nil
}

// DecodeContinue returns the absolute start key and the revision of the snapshot; a revision of -1
// means "the latest", which a 410 answer hands out for an inconsistent continuation.
func DecodeContinue(token, listPrefix string) (string, int64, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, fmt.Errorf("continue key is not valid: %v", err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return "", 0, fmt.Errorf("continue key is not valid: %v", err)
	}
	if c.APIVersion != continueTokenVersion {
		return "", 0, fmt.Errorf("continue key is not valid: server does not recognize this encoded version %q", c.APIVersion)
	}
	if c.ResourceVersion == 0 {
		return "", 0, fmt.Errorf("continue key is not valid: incorrect encoded start resourceVersion (version %s)", continueTokenVersion)
	}
	if c.StartKey == "" {
		return "", 0, fmt.Errorf("continue key is not valid: encoded start key empty (version %s)", continueTokenVersion)
	}
	// A cleaned key cannot climb above the list prefix, so a token cannot range over other namespaces.
	key := "/" + strings.TrimPrefix(c.StartKey, "/")
	if path.Clean(key) != key {
		return "", 0, fmt.Errorf("continue key is not valid: %s", c.StartKey)
	}
	return listPrefix + key[1:], c.ResourceVersion, nil
}
