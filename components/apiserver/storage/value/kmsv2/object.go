package kmsv2

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kubernetes' limits on what a plugin returns.
const (
	annotationsMaxSize        = 32 * 1024
	keyIDMaxSize              = 1024
	encryptedDEKSourceMaxSize = 1024
)

// DEKSourceType says what the plugin wrapped: a seed each write derives its key from, or a key.
type DEKSourceType int32

const (
	// AESGCMKey is a 32-byte AES-GCM key used as is.
	AESGCMKey DEKSourceType = 0
	// HKDFSHA256XNonceAESGCMSeed is a seed deriving a key per write (what orch, like Kubernetes, writes).
	HKDFSHA256XNonceAESGCMSeed DEKSourceType = 1
)

// EncryptedObject is what follows the prefix of a KMS v2 value: Kubernetes' message of the same
// name (kmsv2/v2 api.proto), encoded on the same wire, so the stored bytes have the same layout.
type EncryptedObject struct {
	EncryptedData      []byte            // field 1
	KeyID              string            // field 2
	EncryptedDEKSource []byte            // field 3
	Annotations        map[string][]byte // field 4
	DEKSourceType      DEKSourceType     // field 5
}

// Marshal encodes o as protobuf, fields in number order, map entries in the order given (proto3
// does not fix one).
func (o *EncryptedObject) Marshal() []byte {
	var b []byte
	if len(o.EncryptedData) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, o.EncryptedData)
	}
	if o.KeyID != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, o.KeyID)
	}
	if len(o.EncryptedDEKSource) > 0 {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, o.EncryptedDEKSource)
	}
	for k, v := range o.Annotations {
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, k)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, v)
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, entry)
	}
	if o.DEKSourceType != 0 {
		b = protowire.AppendTag(b, 5, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(o.DEKSourceType))
	}
	return b
}

// Unmarshal decodes data into a new EncryptedObject, skipping unknown fields as protobuf does.
func Unmarshal(data []byte) (*EncryptedObject, error) {
	o := &EncryptedObject{}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		data = data[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			o.EncryptedData, data = append([]byte(nil), v...), data[n:]
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(data)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			o.KeyID, data = v, data[n:]
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			o.EncryptedDEKSource, data = append([]byte(nil), v...), data[n:]
		case num == 4 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			k, val, err := unmarshalEntry(v)
			if err != nil {
				return nil, err
			}
			if o.Annotations == nil {
				o.Annotations = map[string][]byte{}
			}
			o.Annotations[k], data = val, data[n:]
		case num == 5 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			o.DEKSourceType, data = DEKSourceType(int32(v)), data[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			data = data[n:]
		}
	}
	return o, nil
}

func unmarshalEntry(data []byte) (string, []byte, error) {
	var key string
	var val []byte
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return "", nil, protowire.ParseError(n)
		}
		data = data[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			n = protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return "", nil, protowire.ParseError(n)
			}
			data = data[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return "", nil, protowire.ParseError(n)
		}
		if num == 1 {
			key = string(v)
		} else {
			val = append([]byte(nil), v...)
		}
		data = data[n:]
	}
	return key, val, nil
}

// Validate applies Kubernetes' checks to an encrypted object, with its messages.
func (o *EncryptedObject) Validate() error {
	switch o.DEKSourceType {
	case AESGCMKey, HKDFSHA256XNonceAESGCMSeed:
	default:
		return fmt.Errorf("unknown encryptedDEKSourceType: %d", o.DEKSourceType)
	}
	if len(o.EncryptedData) == 0 {
		return errors.New("encrypted data is empty")
	}
	if err := validateEncryptedDEKSource(o.EncryptedDEKSource); err != nil {
		return fmt.Errorf("failed to validate encrypted DEK source: %w", err)
	}
	if err := ValidateKeyID(o.KeyID); err != nil {
		return fmt.Errorf("failed to validate key id: %w", err)
	}
	if err := validateAnnotations(o.Annotations); err != nil {
		return fmt.Errorf("failed to validate annotations: %w", err)
	}
	return nil
}

func validateEncryptedDEKSource(src []byte) error {
	if len(src) == 0 {
		return errors.New("encrypted DEK source is empty")
	}
	if len(src) > encryptedDEKSourceMaxSize {
		return fmt.Errorf("encrypted DEK source is %d bytes, which exceeds the max size of %d", len(src), encryptedDEKSourceMaxSize)
	}
	return nil
}

// ValidateKeyID refuses an empty key ID or one over 1 kB.
func ValidateKeyID(keyID string) error {
	if len(keyID) == 0 {
		return errors.New("keyID is empty")
	}
	if len(keyID) > keyIDMaxSize {
		return fmt.Errorf("keyID is %d bytes, which exceeds the max size of %d", len(keyID), keyIDMaxSize)
	}
	return nil
}

func validateAnnotations(annotations map[string][]byte) error {
	var errs []error
	total := 0
	for k, v := range annotations {
		if fe := validation.IsFullyQualifiedDomainName(field.NewPath("annotations"), k); len(fe) > 0 {
			errs = append(errs, fe.ToAggregate())
		}
		total += len(k) + len(v)
	}
	if total > annotationsMaxSize {
		errs = append(errs, fmt.Errorf("total size of annotations is %d, which exceeds the max size of %d", total, annotationsMaxSize))
	}
	return errors.Join(errs...)
}
