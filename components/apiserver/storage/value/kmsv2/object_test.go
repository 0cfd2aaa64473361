package kmsv2

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// The encrypted object survives its wire form, an unknown field is skipped, and Kubernetes'
// validation rules hold.
func TestEncryptedObject(t *testing.T) {
	o := &EncryptedObject{EncryptedData: []byte("data"), KeyID: "key-1", EncryptedDEKSource: []byte("wrapped"), Annotations: map[string][]byte{"a.example.io": []byte("x")}, DEKSourceType: HKDFSHA256XNonceAESGCMSeed}
	wire := o.Marshal()
	// Field 9, unknown to this version, as a newer writer might add.
	wire = protowire.AppendTag(wire, 9, protowire.BytesType)
	wire = protowire.AppendBytes(wire, []byte("future"))
	got, err := Unmarshal(wire)
	if err != nil || !reflect.DeepEqual(got, o) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// Field 1 first, as protoc writes it: the stored bytes start with the data's tag.
	if !bytes.HasPrefix(wire, []byte{0x0a, 4, 'd', 'a', 't', 'a'}) {
		t.Fatalf("wire starts %x", wire[:6])
	}
	if _, err := Unmarshal([]byte{0x0a, 10, 'x'}); err == nil {
		t.Fatal("a truncated object decoded")
	}
	for name, tc := range map[string]struct {
		mutate func(*EncryptedObject)
		want   string
	}{
		"type":        {func(o *EncryptedObject) { o.DEKSourceType = 7 }, "unknown encryptedDEKSourceType: 7"},
		"data":        {func(o *EncryptedObject) { o.EncryptedData = nil }, "encrypted data is empty"},
		"dek":         {func(o *EncryptedObject) { o.EncryptedDEKSource = nil }, "encrypted DEK source is empty"},
		"dek size":    {func(o *EncryptedObject) { o.EncryptedDEKSource = make([]byte, 1025) }, "exceeds the max size of 1024"},
		"key id":      {func(o *EncryptedObject) { o.KeyID = "" }, "keyID is empty"},
		"key id size": {func(o *EncryptedObject) { o.KeyID = strings.Repeat("k", 1025) }, "keyID is 1025 bytes"},
		"annotation":  {func(o *EncryptedObject) { o.Annotations = map[string][]byte{"Not A Domain": nil} }, "failed to validate annotations"},
	} {
		c := *o
		tc.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
