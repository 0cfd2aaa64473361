package volumes

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/orchlet/events"
)

// Objects reads the configmaps and secrets pods refer to from the API server; a missing object is
// a NotFound Status error (`configmap "x" not found`). Only an agent in API-server mode has one.
type Objects interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Volume plugin directories of the API object volumes, Kubernetes' escaped names renamed.
const (
	configMapPlugin = "orch.io~configmap"
	secretPlugin    = "orch.io~secret"
)

// ReadsObjects says the volumes read the API's configmaps and secrets: SetObjects gave them a client.
func (m *Manager) ReadsObjects() bool { return m.objects != nil }

// ReadObject reads the data of the configmap (secret false) or secret namespace/name. A missing
// optional object is empty; a missing required one is the API's NotFound error, as the kubelet reports it.
func (m *Manager) ReadObject(ctx context.Context, secret bool, namespace, name string, optional *bool) (map[string][]byte, error) {
	if secret {
		s, err := m.objects.GetSecret(ctx, namespace, name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(optional) {
				return nil, nil
			}
			return nil, err
		}
		return s.Data, nil
	}
	cm, err := m.objects.GetConfigMap(ctx, namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && isTrue(optional) {
			return nil, nil
		}
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data, nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// objectFiles are the files of a configMap or secret volume (or projection): every key, or the
// items named, with their modes, as the kubelet's configmap and secret plugins' MakePayload.
func (m *Manager) objectFiles(ctx context.Context, p Pod, secret bool, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool, files map[string]fileContent) error {
	data, err := m.ReadObject(ctx, secret, p.Pod.Namespace, name, optional)
	if err != nil {
		return err
	}
	mode := int32(corev1.ConfigMapVolumeSourceDefaultMode)
	if defaultMode != nil {
		mode = *defaultMode
	}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = fileContent{data: v, mode: fs.FileMode(mode)}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if isTrue(optional) {
				continue
			}
			if secret {
				return fmt.Errorf("references non-existent secret key: %s", it.Key)
			}
			return fmt.Errorf("configmap references non-existent config key: %s", it.Key)
		}
		itemMode := mode
		if it.Mode != nil {
			itemMode = *it.Mode
		}
		files[it.Path] = fileContent{data: v, mode: fs.FileMode(itemMode)}
	}
	return nil
}

// writeObjectVolume writes a configMap, secret or projected volume with AtomicWriter's layout.
func (m *Manager) writeObjectVolume(ctx context.Context, p Pod, v *corev1.Volume) error {
	files := map[string]fileContent{}
	var err error
	switch s := v.VolumeSource; {
	case s.ConfigMap != nil:
		err = m.objectFiles(ctx, p, false, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.DefaultMode, s.ConfigMap.Optional, files)
	case s.Secret != nil:
		err = m.objectFiles(ctx, p, true, s.Secret.SecretName, s.Secret.Items, s.Secret.DefaultMode, s.Secret.Optional, files)
	case s.Projected != nil:
		mode := s.Projected.DefaultMode
		if mode == nil {
			d := int32(corev1.ProjectedVolumeSourceDefaultMode)
			mode = &d
		}
		for _, src := range s.Projected.Sources {
			switch {
			case err != nil:
			case src.ConfigMap != nil:
				err = m.objectFiles(ctx, p, false, src.ConfigMap.Name, src.ConfigMap.Items, mode, src.ConfigMap.Optional, files)
			case src.Secret != nil:
				err = m.objectFiles(ctx, p, true, src.Secret.Name, src.Secret.Items, mode, src.Secret.Optional, files)
			case src.DownwardAPI != nil:
				err = m.downwardAPIFiles(p, src.DownwardAPI.Items, mode, files)
			case src.ServiceAccountToken != nil:
				err = m.tokenFile(ctx, p, src.ServiceAccountToken, *mode, files)
			}
		}
	}
	if err != nil {
		return err
	}
	return atomicWrite(m.volumePath(p.Pod, v), files, m.clk.Now().Format("2006_01_02_15_04_05."))
}

// readsObjects tells whether v is a volume whose files come from the API's objects (tokens included).
func readsObjects(v *corev1.Volume) bool {
	if v.ConfigMap != nil || v.Secret != nil {
		return true
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil || s.Secret != nil || s.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}

// Refresh rewrites the set-up volumes that read configmaps, secrets and tokens, as
// the kubelet's volume manager remounts them on each sync of a running pod: an object changed (a
// token due for renewal) reaches the files within a sync period; a file that would not change is
// not rewritten.
func (m *Manager) Refresh(ctx context.Context, p Pod) {
	if m.objects == nil && m.tokens == nil {
		return
	}
	for i := range p.Pod.Spec.Volumes {
		v := &p.Pod.Spec.Volumes[i]
		if !readsObjects(v) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(m.volumePath(p.Pod, v), "..data")); err != nil {
			continue // not set up yet: the sandbox's setup writes it
		}
		if err := m.setUpVolume(ctx, p, v); err != nil {
			m.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, ReasonFailedMount, "Mount", "MountVolume.SetUp failed for volume %q : %v", v.Name, err)
		}
	}
}
