package value

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"strings"
	"testing"
)

func key(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n) }

func must(tr Transformer, err error) Transformer {
	if err != nil {
		panic(err)
	}
	return tr
}

// Every provider's transformer reads back what it wrote, writes differently each time (a random
// nonce or IV), and does not read with another key; the authenticating ones also refuse the value
// under another storage key.
func TestTransformersRoundTrip(t *testing.T) {
	ctx := context.Background()
	plain := []byte(`{"kind":"Event","apiVersion":"events.orch.io/v1","metadata":{"name":"a"}}`)
	ad := []byte("/registry/events.orch.io/events/default/a")
	for _, tc := range []struct {
		name          string
		make          func(k []byte) (Transformer, error)
		keySize       int
		authenticates bool
		// overhead is the stored size beyond the plain value (CBC pads to the block).
		overhead func(n int) int
	}{
		{"aesgcm-16", NewGCM, 16, true, func(int) int { return 12 + 16 }},
		{"aesgcm-24", NewGCM, 24, true, func(int) int { return 12 + 16 }},
		{"aesgcm-32", NewGCM, 32, true, func(int) int { return 12 + 16 }},
		{"aescbc", NewCBC, 32, false, func(n int) int { return 16 + (16 - n%16) }},
		{"secretbox", NewSecretbox, 32, false, func(int) int { return 24 + 16 }},
		{"hkdf-extended-nonce-gcm", NewHKDFExtendedNonceGCM, 32, true, func(int) int { return 32 + 12 + 16 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := must(tc.make(key(tc.keySize, 1)))
			a, err := tr.TransformToStorage(ctx, plain, ad)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := tr.TransformToStorage(ctx, plain, ad)
			if bytes.Equal(a, b) {
				t.Fatal("two writes of one value are identical: the nonce or IV is not random")
			}
			if bytes.Contains(a, []byte("Event")) {
				t.Fatal("the stored value contains the plain text")
			}
			if len(a) != len(plain)+tc.overhead(len(plain)) {
				t.Fatalf("stored %d bytes for %d, want overhead %d", len(a), len(plain), tc.overhead(len(plain)))
			}
			got, stale, err := tr.TransformFromStorage(ctx, a, ad)
			if err != nil || stale || !bytes.Equal(got, plain) {
				t.Fatalf("read back %q stale=%v err=%v", got, stale, err)
			}
			other := must(tc.make(key(tc.keySize, 2)))
			if got, _, err := other.TransformFromStorage(ctx, a, ad); err == nil && bytes.Equal(got, plain) {
				t.Fatal("another key read the value")
			}
			_, _, err = tr.TransformFromStorage(ctx, a, []byte("/registry/events.orch.io/events/default/b"))
			if tc.authenticates && err == nil {
				t.Fatal("the value read under another storage key: the key is not authenticated")
			}
			if !tc.authenticates && err != nil {
				t.Fatalf("unauthenticated provider failed under another key: %v", err)
			}
			if _, _, err := tr.TransformFromStorage(ctx, a[:5], ad); err == nil {
				t.Fatal("a truncated value read without error")
			}
		})
	}
}

// Key sizes the ciphers refuse are refused when the transformer is made.
func TestTransformerKeySizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func([]byte) (Transformer, error)
		size int
	}{
		{"aesgcm-15", NewGCM, 15}, {"aescbc-31", NewCBC, 31}, {"secretbox-16", NewSecretbox, 16}, {"seed-16", NewHKDFExtendedNonceGCM, 16},
	} {
		if _, err := tc.make(key(tc.size, 1)); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// CBC values with a broken length or padding are errors, not garbage.
func TestCBCRejectsBadPadding(t *testing.T) {
	k := key(32, 3)
	tr := must(NewCBC(k))
	block, _ := aes.NewCipher(k)
	seal := func(plain []byte) []byte {
		out := make([]byte, 16+len(plain))
		cipher.NewCBCEncrypter(block, out[:16]).CryptBlocks(out[16:], plain)
		return out
	}
	for name, tc := range map[string]struct {
		data []byte
		want error
	}{
		"not a block multiple": {make([]byte, 16+5), errInvalidBlockSize},
		"zero padding":         {seal(append(bytes.Repeat([]byte("a"), 15), 0)), errInvalidPKCS7Data},
		"padding past the end": {seal(append(bytes.Repeat([]byte("a"), 15), 17)), errInvalidPKCS7Data},
		"inconsistent padding": {seal(append(bytes.Repeat([]byte("a"), 14), 1, 2)), errInvalidPKCS7Padding},
		"no block after iv":    {make([]byte, 16), errInvalidPKCS7Data},
	} {
		if _, _, err := tr.TransformFromStorage(context.Background(), tc.data, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", name, err, tc.want)
		}
	}
	// A valid padding of a full block is read.
	got, _, err := tr.TransformFromStorage(context.Background(), seal(append([]byte("0123456789abcdef"), bytes.Repeat([]byte{16}, 16)...)), nil)
	if err != nil || string(got) != "0123456789abcdef" {
		t.Fatalf("full-block padding: %q, %v", got, err)
	}
}

// The first provider writes, with its prefix; every provider reads what carries its prefix, and
// a value read by another than the first is stale. identity refuses encrypted data but lets a
// later provider read it; a value nobody reads is the configured error.
func TestPrefixTransformers(t *testing.T) {
	ctx := context.Background()
	ad := []byte("/registry/x/y/z")
	gcm1 := must(NewGCM(key(32, 1)))
	gcm2 := must(NewGCM(key(32, 2)))
	cbc := must(NewCBC(key(32, 3)))
	unknown := errors.New("no matching prefix found")
	list := func(ps ...PrefixTransformer) Transformer { return NewPrefixTransformers(unknown, ps...) }
	both := list(
		PrefixTransformer{Prefix: []byte("orch:enc:aesgcm:v1:key2:"), Transformer: gcm2},
		PrefixTransformer{Prefix: []byte("orch:enc:aesgcm:v1:key1:"), Transformer: gcm1},
		PrefixTransformer{Prefix: []byte{}, Transformer: Identity},
	)
	onlyKey1 := list(PrefixTransformer{Prefix: []byte("orch:enc:aesgcm:v1:key1:"), Transformer: gcm1}, PrefixTransformer{Prefix: []byte{}, Transformer: Identity})
	identityFirst := list(PrefixTransformer{Prefix: []byte{}, Transformer: Identity}, PrefixTransformer{Prefix: []byte("orch:enc:aescbc:v1:k:"), Transformer: cbc})
	cbcOnly := list(PrefixTransformer{Prefix: []byte("orch:enc:aescbc:v1:k:"), Transformer: cbc})

	written, err := both.TransformToStorage(ctx, []byte("hello"), ad)
	if err != nil || !bytes.HasPrefix(written, []byte("orch:enc:aesgcm:v1:key2:")) {
		t.Fatalf("first provider did not write: %q %v", written, err)
	}
	old, _ := onlyKey1.TransformToStorage(ctx, []byte("hello"), ad)
	byCBC, _ := cbcOnly.TransformToStorage(ctx, []byte("hello"), ad)
	for _, tc := range []struct {
		name      string
		tr        Transformer
		data      []byte
		wantStale bool
		wantErr   string
	}{
		{"first key reads its own", both, written, false, ""},
		{"second key reads and marks stale", both, old, true, ""},
		{"identity after keys reads plain and marks stale", both, []byte(`{"a":1}`), true, ""},
		{"identity first reads plain, fresh", identityFirst, []byte(`{"a":1}`), false, ""},
		{"identity first skips encrypted data to a later provider", identityFirst, byCBC, true, ""},
		{"a key not listed", onlyKey1, written, false, "no matching prefix found"},
		{"plain data without identity", cbcOnly, []byte(`{"a":1}`), false, "no matching prefix found"},
		{"another provider's data", cbcOnly, written, false, "no matching prefix found"},
		{"identity alone refuses encrypted data", list(PrefixTransformer{Prefix: []byte{}, Transformer: Identity}), written, false, "no matching prefix found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stale, err := tc.tr.TransformFromStorage(ctx, tc.data, ad)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || stale != tc.wantStale {
				t.Fatalf("stale=%v err=%v, want stale=%v", stale, err, tc.wantStale)
			}
			if string(got) != "hello" && string(got) != `{"a":1}` {
				t.Fatalf("read %q", got)
			}
		})
	}
}

func TestIdentityRefusesEncryptedData(t *testing.T) {
	if _, _, err := Identity.TransformFromStorage(context.Background(), []byte("orch:enc:aescbc:v1:k:xxxx"), nil); err == nil || err.Error() != "identity transformer tried to read encrypted data" {
		t.Fatalf("err %v", err)
	}
	out, _ := Identity.TransformToStorage(context.Background(), []byte("x"), nil)
	if string(out) != "x" {
		t.Fatalf("identity wrote %q", out)
	}
}

func TestDescribePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"orch:enc:aescbc:v1:key1:\x00\x01binary": `"orch:enc:aescbc:v1:key1:"`,
		"orch:enc:kms:v2:my-plugin:\n\x05":       `"orch:enc:kms:v2:my-plugin:"`,
		`{"kind":"Event"}`:                       "no encryption prefix (the value is stored unencrypted)",
		"orch:enc:short":                         `"orch:enc:short"`,
	} {
		if got := DescribePrefix([]byte(in)); got != want {
			t.Errorf("DescribePrefix(%q) = %s, want %s", in, got, want)
		}
	}
}
