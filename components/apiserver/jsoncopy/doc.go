// Package jsoncopy copies a Go value into what encoding/json's round trip of it (Marshal, then
// Unmarshal into a new value) would give, without writing or scanning the bytes, and writes an
// object's encoding by splicing what changed into the encoding of an earlier form of it.
package jsoncopy
