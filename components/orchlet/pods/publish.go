package pods

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// publishTouched copies again only the pods touched since the last publish: an item that only
// relisted and found nothing new publishes nothing.
func (m *Manager) publishTouched() {
	m.shared.Lock()
	fresh := false
	for uid := range m.touched {
		if m.busy[uid] {
			continue // a worker is changing its status: published once it is done
		}
		if p := m.pods[uid]; p != nil {
			p.snap = nil
		}
		delete(m.touched, uid)
		fresh = true
	}
	m.shared.Unlock()
	if !fresh {
		return
	}
	out := make([]*corev1.Pod, 0, len(m.pods))
	stopping := map[types.UID]bool{}
	for uid, p := range m.pods {
		if p.Removed {
			stopping[uid] = true
			continue
		}
		if p.snap == nil && m.busy[uid] {
			continue // never published yet, and its worker is changing it
		}
		if p.snap == nil {
			p.snap = p.Pod.DeepCopy()
			p.Status.DeepCopyInto(&p.snap.Status)
		}
		out = append(out, p.snap)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	m.published.Publish(out, stopping, func(uid types.UID) (bool, bool) {
		p := m.pods[uid]
		return p != nil, p != nil && p.Evicted != nil
	})
}
