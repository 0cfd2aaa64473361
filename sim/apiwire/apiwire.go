package apiwire

import (
	"bytes"
	"encoding/binary"
	"time"
)

// The trace shows of a node's status post its Node's name and conditions, and of a lease
// renewal the Lease's name and renew time; decoding the whole answer for them was the
// simulator's largest cost in a round trip (a Node's images, info and addresses are most of its
// bytes). So an answer in Kubernetes' protobuf envelope is read for those fields alone, as the
// generated Unmarshal methods would read them; anything else, or an answer that is not
// well-formed, is decoded whole as before.

// Magic starts Kubernetes' protobuf envelope, which orch's wire form keeps.
var Magic = []byte("k8s\x00")

// Condition is what the trace shows of a node condition.
type Condition struct {
	Type, Status string
	Since        time.Time
}

// Field numbers of Kubernetes' protobuf messages (k8s.io/api's and apimachinery's
// generated.proto).
const (
	unknownRaw              = 2 // runtime.Unknown.raw
	objectMetaName          = 1
	objectMetaNamespace     = 3
	nodeMetadata            = 1
	nodeStatus              = 3
	nodeStatusConditions    = 4
	nodeConditionType       = 1
	nodeConditionStatus     = 2
	nodeConditionTransition = 4
	leaseMetadata           = 1
	leaseSpec               = 2
	leaseSpecRenewTime      = 4
	timestampSeconds        = 1
	timestampNanos          = 2
)

// protoFields calls f with each field of message b, in order: its number and its bytes (length
// delimited) or value (varint). It reports false if b is not well-formed or f stopped.
func protoFields(b []byte, f func(num uint64, v []byte, x uint64) bool) bool {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return false
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			x, n := binary.Uvarint(b)
			if n <= 0 || !f(tag>>3, nil, x) {
				return false
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return false
			}
			b = b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return false
			}
			v := b[n : n+int(l)]
			b = b[n+int(l):]
			if !f(tag>>3, v, 0) {
				return false
			}
		case 5:
			if len(b) < 4 {
				return false
			}
			b = b[4:]
		default:
			return false
		}
	}
	return true
}

// protoRaw is the object's bytes in a protobuf envelope; false if body is not one.
func protoRaw(body []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(body, Magic)
	if !ok {
		return nil, false
	}
	var raw []byte
	return raw, protoFields(rest, func(num uint64, v []byte, _ uint64) bool {
		if num == unknownRaw {
			raw = v
		}
		return true
	})
}

// protoName reads an ObjectMeta's namespace and name.
func protoName(meta []byte, namespace, name *string) bool {
	return protoFields(meta, func(num uint64, v []byte, _ uint64) bool {
		switch num {
		case objectMetaName:
			*name = string(v)
		case objectMetaNamespace:
			*namespace = string(v)
		}
		return true
	})
}

// protoTime reads a Timestamp as metav1.Time's Unmarshal does (seconds only; empty is zero), or,
// micro, as MicroTime's (nanoseconds truncated to microseconds).
func protoTime(b []byte, micro bool) (time.Time, bool) {
	if len(b) == 0 {
		return time.Time{}, true
	}
	var sec, nanos int64
	ok := protoFields(b, func(num uint64, _ []byte, x uint64) bool {
		switch num {
		case timestampSeconds:
			sec = int64(x)
		case timestampNanos:
			nanos = int64(int32(x))
		}
		return true
	})
	if !micro {
		nanos = 0
	}
	return time.Unix(sec, int64(time.Duration(nanos).Truncate(time.Microsecond))).Local(), ok
}

// Node reads a Node's name and conditions, appended to conds, from an answer in the protobuf
// envelope.
func Node(body []byte, conds []Condition) (name string, _ []Condition, ok bool) {
	raw, ok := protoRaw(body)
	if !ok {
		return "", conds, false
	}
	var namespace string
	ok = protoFields(raw, func(num uint64, v []byte, _ uint64) bool {
		switch num {
		case nodeMetadata:
			return protoName(v, &namespace, &name)
		case nodeStatus:
			return protoFields(v, func(num uint64, v []byte, _ uint64) bool {
				if num != nodeStatusConditions {
					return true
				}
				var c Condition
				conds = append(conds, c)
				last := &conds[len(conds)-1]
				return protoFields(v, func(num uint64, v []byte, _ uint64) bool {
					switch num {
					case nodeConditionType:
						last.Type = known(v)
					case nodeConditionStatus:
						last.Status = known(v)
					case nodeConditionTransition:
						var ok bool
						last.Since, ok = protoTime(v, false)
						return ok
					}
					return true
				})
			})
		}
		return true
	})
	return name, conds, ok
}

// known is v as a string, the condition types and statuses a node posts made once rather than at
// every answer.
func known(v []byte) string {
	switch string(v) {
	case "Ready":
		return "Ready"
	case "MemoryPressure":
		return "MemoryPressure"
	case "DiskPressure":
		return "DiskPressure"
	case "PIDPressure":
		return "PIDPressure"
	case "NetworkUnavailable":
		return "NetworkUnavailable"
	case "True":
		return "True"
	case "False":
		return "False"
	case "Unknown":
		return "Unknown"
	}
	return string(v)
}

// Lease reads a Lease's namespace, name and renew time (nil if unset) from an answer in the
// protobuf envelope.
func Lease(body []byte) (namespace, name string, renew *time.Time, ok bool) {
	raw, ok := protoRaw(body)
	if !ok {
		return "", "", nil, false
	}
	ok = protoFields(raw, func(num uint64, v []byte, _ uint64) bool {
		switch num {
		case leaseMetadata:
			return protoName(v, &namespace, &name)
		case leaseSpec:
			return protoFields(v, func(num uint64, v []byte, _ uint64) bool {
				if num != leaseSpecRenewTime {
					return true
				}
				t, ok := protoTime(v, true)
				renew = &t
				return ok
			})
		}
		return true
	})
	return namespace, name, renew, ok
}
