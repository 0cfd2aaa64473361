package pods

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageUser is kuberuntime's getImageUser: the image's numeric user, else its user name, else root.
func (m *Manager) imageUser(ctx context.Context, imageRef string) (*int64, string, error) {
	var img *runtimeapi.Image
	if err := m.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := m.img.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef}, false)
		img = resp.GetImage()
		return err
	}); err != nil {
		return nil, "", err
	}
	if img.GetUid() != nil {
		uid := img.GetUid().GetValue()
		return &uid, "", nil
	}
	if img.GetUsername() != "" {
		return nil, img.GetUsername(), nil
	}
	return new(int64), "", nil
}
