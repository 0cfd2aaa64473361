package apiclient

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A renewal over a Lease kept as bytes is, on the wire, the request a renewal over the decoded
// Lease makes (method, URL, headers, body), for Leases with every spec field set or none; an
// answer in JSON, or of another kind, is decoded.
func TestRenewLeaseOverBytesIsOverDecoded(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 30, 11, 0, 0, 123000, time.UTC))
	holder, other, duration, transitions := "n1", "n2", int32(40), int32(2)
	strategy := coordinationv1.OldestEmulationVersion
	rich := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "orch-node-lease", UID: "l-1", ResourceVersion: "9", Labels: map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u-1"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.orch.io/v1", Time: &metav1.Time{Time: at.Time},
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:holderIdentity":{}}}`)}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: &duration, AcquireTime: &at, RenewTime: &at, LeaseTransitions: &transitions,
			Strategy: &strategy, PreferredHolder: &other},
	}
	renewedAt := metav1.NewMicroTime(at.Add(10 * time.Second))
	renew := func(s *coordinationv1.LeaseSpec) {
		s.HolderIdentity, s.LeaseDurationSeconds, s.RenewTime = &holder, &duration, &renewedAt
	}
	for name, tc := range map[string]struct {
		lease    *coordinationv1.Lease
		answer   func(*testing.T, *coordinationv1.Lease) ([]byte, string)
		keptWire bool
		wantErr  string
	}{
		"name alone":  {&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "orch-node-lease"}}, leaseProtobuf, true, ""},
		"every field": {rich, leaseProtobuf, true, ""},
		"JSON": {rich, func(t *testing.T, l *coordinationv1.Lease) ([]byte, string) {
			return []byte(`{"kind":"Lease","apiVersion":"coordination.orch.io/v1","metadata":{"name":"n1","namespace":"orch-node-lease"}}`), "application/json"
		}, false, ""},
		"a Node": {rich, func(t *testing.T, _ *coordinationv1.Lease) ([]byte, string) {
			return protobufAnswer(t, typedNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})), ProtobufMediaType
		}, false, `no kind "Node" is registered`},
	} {
		t.Run(name, func(t *testing.T) {
			answer, answerType := tc.answer(t, tc.lease)
			var sent []string
			c := recordingClients(t, answer, answerType, &sent)
			ctx := context.Background()
			posted, err := RenewLease(ctx, c.Leases, "orch-node-lease", "n1", NewPostedLease(tc.lease.DeepCopy()), renew)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %s, as Into's", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kept := posted.head != nil; kept != tc.keptWire {
				t.Fatalf("answer kept as bytes %v, want %v", kept, tc.keptWire)
			}
			if !tc.keptWire {
				if posted.Lease == nil || posted.Lease.Name != "n1" {
					t.Fatalf("answer decoded as %+v", posted.Lease)
				}
				return
			}
			if _, err := RenewLease(ctx, c.Leases, "orch-node-lease", "n1", posted, renew); err != nil {
				t.Fatal(err)
			}
			if len(sent) != 2 || sent[1] != sent[0] {
				t.Errorf("requests differ:\n%s", strings.Join(sent, "\n"))
			}
		})
	}
}

// leaseProtobuf is the answer of a renewal of l: l renewed, as the API server encodes it.
func leaseProtobuf(t *testing.T, l *coordinationv1.Lease) ([]byte, string) {
	l = l.DeepCopy()
	l.APIVersion, l.Kind = CoordinationGroupVersion.String(), "Lease"
	return protobufAnswer(t, l), ProtobufMediaType
}
