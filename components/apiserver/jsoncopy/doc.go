// Package jsoncopy copies a Go value into what encoding/json's round trip of it (Marshal, then
// Unmarshal into a new value) would give, without writing or scanning the bytes.
package jsoncopy
