package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// ErrInvalidToken is the error a token authenticator answers for a bearer token it does not know.
var ErrInvalidToken = errors.New("invalid bearer token")

// TokenFile authenticates bearer tokens listed in a static file, the format of Kubernetes'
// --token-auth-file. It is safe for concurrent use; the file is read once, by NewTokenFile.
type TokenFile struct {
	// tokens is keyed by the SHA-256 of the token, so that a lookup's timing says nothing useful
	// about the tokens; the token itself is then compared in constant time.
	tokens map[[sha256.Size]byte]tokenEntry
}

type tokenEntry struct {
	token string
	user  UserInfo
}

// NewTokenFile reads a token file: CSV records `token,user,uid[,"group1,group2"]`.
//
// Blank lines and lines starting with # are skipped; columns after the fourth are ignored; group
// names are trimmed and empty ones dropped. A record with fewer than 3 columns, an empty token or a
// token already listed is an error naming the file and line; every such mistake in the file is
// reported, not just the first.
func NewTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	return parseTokenFile(path, f)
}

func parseTokenFile(path string, in io.Reader) (*TokenFile, error) {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	r.Comment = '#'

	tf := &TokenFile{tokens: map[[sha256.Size]byte]tokenEntry{}}
	firstLine := map[[sha256.Size]byte]int{}
	var errs []error
	for {
		record, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A CSV syntax error (*csv.ParseError) already names its line and column.
			errs = append(errs, fmt.Errorf("token file %q: %w", path, err))
			break
		}
		line, _ := r.FieldPos(0)
		lineErr := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("token file %q, line %d: %s", path, line, fmt.Sprintf(format, args...)))
		}
		if len(record) < 3 {
			lineErr("must have at least 3 columns (token, user name, user uid), found %d", len(record))
			continue
		}
		token := record[0]
		if token == "" {
			lineErr("empty token")
			continue
		}
		key := sha256.Sum256([]byte(token))
		if first, dup := firstLine[key]; dup {
			lineErr("duplicate token (first listed on line %d)", first)
			continue
		}
		firstLine[key] = line
		entry := tokenEntry{token: token, user: UserInfo{Name: record[1], UID: record[2]}}
		if len(record) >= 4 {
			for _, g := range strings.Split(record[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					entry.user.Groups = append(entry.user.Groups, g)
				}
			}
		}
		tf.tokens[key] = entry
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return tf, nil
}

// Len returns the number of tokens in the file.
func (t *TokenFile) Len() int {
	return len(t.tokens)
}

// AuthenticateToken looks a token up. It answers ErrInvalidToken for a token it does not know.
// The user returned is a fresh copy with the group system:authenticated added.
func (t *TokenFile) AuthenticateToken(token string) (*UserInfo, bool, error) {
	key := sha256.Sum256([]byte(token))
	entry, found := t.tokens[key]
	if !found || subtle.ConstantTimeCompare([]byte(entry.token), []byte(token)) != 1 {
		return nil, false, ErrInvalidToken
	}
	return withAuthenticatedGroup(entry.user.DeepCopy()), true, nil
}

// AuthenticateRequest authenticates the request's bearer token. A request without one gets no
// opinion; an unknown token gets ErrInvalidToken. On success the Authorization header is removed
// from the request, as Kubernetes does, so that the token is not passed on by the server.
func (t *TokenFile) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	token, ok := BearerToken(r)
	if !ok {
		return nil, false, nil
	}
	user, ok, err := t.AuthenticateToken(token)
	if ok {
		r.Header.Del("Authorization")
	}
	return user, ok, err
}
