package apiclient

import (
	"context"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"
)

// PostedLease is the Lease a renewal answered, over which the next renewal is made: kept as its
// bytes when the answer was protobuf, as PostedNode is, so that a renewal decodes and encodes the
// spec alone, not the metadata with its managed fields.
type PostedLease struct {
	// Lease is the decoded Lease, when the answer was not kept as bytes.
	Lease *coordinationv1.Lease
	// head is the Lease's metadata field as answered and spec its spec field's contents (nil
	// head: Lease).
	head, spec []byte
}

// NewPostedLease is l as the base of a renewal.
func NewPostedLease(l *coordinationv1.Lease) PostedLease { return PostedLease{Lease: l} }

// Valid says whether p is a Lease, not the zero PostedLease.
func (p PostedLease) Valid() bool { return p.Lease != nil || p.head != nil }

const leaseSpec protowire.Number = 2

// RenewLease puts the Lease name in namespace, posted with renew applied to its spec, through
// client (one of New's, Leases), and returns what the server answered. A Lease kept as bytes was
// answered in protobuf, which New's clients ask for only when they send it, and goes back in it.
func RenewLease(ctx context.Context, client rest.Interface, namespace, name string, posted PostedLease, renew func(*coordinationv1.LeaseSpec)) (PostedLease, error) {
	req := client.Put().Namespace(namespace).Resource("leases").Name(name)
	if posted.head != nil {
		var spec coordinationv1.LeaseSpec
		if err := spec.Unmarshal(posted.spec); err != nil {
			return PostedLease{}, err
		}
		renew(&spec)
		body := objectBody(CoordinationGroupVersion.String(), "Lease", spliced{head: posted.head, num: leaseSpec, last: &spec, size: spec.Size()})
		agent := ""
		if l, ok := client.(*LeaseClient); ok {
			agent = l.wireAgent
		}
		req = wireForm(req, agent).Body(body)
	} else {
		renew(&posted.Lease.Spec)
		req = req.Body(posted.Lease)
	}
	r := req.Do(ctx)
	if err := r.Error(); err != nil {
		return PostedLease{}, err
	}
	body, _ := r.Raw()
	if raw, ok := envelopeObject(body, CoordinationGroupVersion.String(), "Lease"); ok {
		if at, spec, ok := fieldsInOrder(raw, leaseSpec); ok {
			return PostedLease{head: raw[:at:at], spec: spec}, nil
		}
	}
	lease := &coordinationv1.Lease{}
	if err := r.Into(lease); err != nil {
		return PostedLease{}, err
	}
	return PostedLease{Lease: lease}, nil
}
