package fakecri

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

const (
	ki = 1 << 10
	mi = 1 << 20
)

type image struct {
	id          string // sha256:<config digest>
	manifest    string // sha256:<manifest digest>
	repoTags    []string
	repoDigests []string
	size        uint64
	inodes      uint64
	pinned      bool
	uid         *int64
	username    string
	pulledAt    time.Time
	removed     bool
}

// imageRef is a parsed image reference.
type imageRef struct {
	repo   string // docker.io/library/nginx
	tag    string // latest (empty when pulled by digest)
	digest string // sha256:... when given
}

func (r imageRef) tagged() string {
	if r.tag == "" {
		return ""
	}
	return r.repo + ":" + r.tag
}

func (r imageRef) String() string {
	if r.digest != "" {
		return r.repo + "@" + r.digest
	}
	return r.tagged()
}

var (
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagRe         = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	hex64         = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// parseImageRef normalizes an image reference the way docker and
// containerd do: "nginx" is docker.io/library/nginx:latest.
func parseImageRef(s string) (imageRef, error) {
	var ref imageRef
	bad := func(why string) (imageRef, error) {
		return imageRef{}, fmt.Errorf("parse reference %q: invalid reference format: %s", s, why)
	}
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return bad("empty or has spaces")
	}
	name := s
	if i := strings.IndexByte(name, '@'); i >= 0 {
		ref.digest = name[i+1:]
		name = name[:i]
		if !script.ValidDigest(ref.digest) {
			return bad("digest is not sha256:<64 hex>")
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		ref.tag = name[i+1:]
		name = name[:i]
		if !tagRe.MatchString(ref.tag) {
			return bad("bad tag")
		}
	}
	domain, rest := "docker.io", name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		first := name[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" {
			domain, rest = first, name[i+1:]
		}
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	for _, c := range strings.Split(rest, "/") {
		if !pathComponent.MatchString(c) {
			return bad("bad repository name")
		}
	}
	ref.repo = domain + "/" + rest
	if ref.digest != "" {
		ref.tag = "" // a digest wins over a tag, as in containerd
	} else if ref.tag == "" {
		ref.tag = "latest"
	}
	return ref, nil
}

func digestOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// defaultSize derives a plausible size (2Mi to 200Mi) from the name.
func defaultSize(name string) uint64 {
	h := sha256.Sum256([]byte("size\x00" + name))
	return 2*mi + binary.BigEndian.Uint64(h[:8])%(198*mi)
}

// lookupImageLocked finds an image by id, id prefix, tag or digest reference.
func (r *Runtime) lookupImageLocked(s string) *image {
	if s == "" {
		return nil
	}
	if id, ok := r.imageRefs[s]; ok {
		return r.images[id]
	}
	if hex64.MatchString(s) {
		return r.images["sha256:"+s]
	}
	if ref, err := parseImageRef(s); err == nil {
		if id, ok := r.imageRefs[ref.String()]; ok {
			return r.images[id]
		}
	}
	// a truncated id (crictl shows 13 characters)
	p := strings.TrimPrefix(s, "sha256:")
	if len(p) >= 4 && len(p) < 64 && strings.Trim(p, "0123456789abcdef") == "" {
		var found *image
		for _, im := range r.imgOrder {
			if !im.removed && strings.HasPrefix(im.id[7:], p) {
				if found != nil {
					return nil
				}
				found = im
			}
		}
		return found
	}
	return nil
}

// plannedImage is what a pull of ref produces.
func plannedImage(c *script.Compiled, raw string, ref imageRef) (manifest string, size uint64, rule *script.CompiledImageRule) {
	rule = c.ImageRule(raw, ref.tagged(), ref.String(), ref.repo)
	switch {
	case ref.digest != "":
		manifest = ref.digest
	case rule != nil && rule.Digest != "":
		manifest = rule.Digest
	default:
		manifest = digestOf("manifest", ref.tagged())
	}
	size = defaultSize(ref.repo + "@" + manifest)
	if rule != nil && rule.Size != nil {
		size = uint64(rule.Size.Value())
	}
	return manifest, size, rule
}

// addImageLocked records a pulled image (merging with one of the same
// manifest) and returns it.
func (r *Runtime) addImageLocked(ref imageRef, manifest string, size uint64, rule *script.CompiledImageRule, pinned bool) *image {
	id := digestOf("config", manifest)
	im := r.images[id]
	if im == nil {
		im = &image{id: id, manifest: manifest, size: size, inodes: size/(48*ki) + 16, pulledAt: r.now()}
		r.images[id] = im
		r.imgOrder = append(r.imgOrder, im)
		r.imageRefs[id] = id
	}
	im.pinned = im.pinned || pinned
	if rule != nil {
		im.pinned = im.pinned || rule.Pinned
		if rule.UID != nil {
			im.uid = rule.UID
		}
		if rule.Username != "" {
			im.username = rule.Username
		}
	}
	if t := ref.tagged(); t != "" {
		if old, ok := r.imageRefs[t]; ok && old != id {
			// the tag moves to the new image
			if o := r.images[old]; o != nil {
				o.repoTags = without(o.repoTags, t)
			}
		}
		if !contains(im.repoTags, t) {
			im.repoTags = append(im.repoTags, t)
		}
		r.imageRefs[t] = id
	}
	d := ref.repo + "@" + manifest
	if !contains(im.repoDigests, d) {
		im.repoDigests = append(im.repoDigests, d)
	}
	r.imageRefs[d] = id
	return im
}

func (r *Runtime) ensureImageLocked(c *script.Compiled, raw string, pinned bool) *image {
	ref, err := parseImageRef(raw)
	if err != nil {
		return nil
	}
	if im := r.lookupImageLocked(ref.String()); im != nil {
		im.pinned = im.pinned || pinned
		return im
	}
	manifest, size, rule := plannedImage(c, raw, ref)
	if raw == c.SandboxImage && (rule == nil || rule.Size == nil) {
		size = 320 * ki
	}
	return r.addImageLocked(ref, manifest, size, rule, pinned)
}

func (r *Runtime) removeImageLocked(im *image) {
	im.removed = true
	delete(r.images, im.id)
	for k, v := range r.imageRefs {
		if v == im.id {
			delete(r.imageRefs, k)
		}
	}
	out := r.imgOrder[:0]
	for _, x := range r.imgOrder {
		if !x.removed {
			out = append(out, x)
		}
	}
	r.imgOrder = out
}

func without(s []string, v string) []string {
	out := s[:0:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (im *image) toCRI() *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          im.id,
		RepoTags:    append([]string(nil), im.repoTags...),
		RepoDigests: append([]string(nil), im.repoDigests...),
		Size:        im.size,
		Pinned:      im.pinned,
		Username:    im.username,
		Spec:        &runtimeapi.ImageSpec{Image: im.id},
	}
	if im.username == "" {
		uid := int64(0)
		if im.uid != nil {
			uid = *im.uid
		}
		out.Uid = &runtimeapi.Int64Value{Value: uid}
	}
	return out
}

// ---- ImageService ----

// ListImages lists the images present, in the order they arrived.
func (r *Runtime) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	list := func() []*runtimeapi.Image { return r.listImages(req.GetFilter()) }
	return listCall(ctx, r, mListImages, req, "images", list, func(imgs []*runtimeapi.Image) *runtimeapi.ListImagesResponse {
		return &runtimeapi.ListImagesResponse{Images: imgs}
	})
}

func (r *Runtime) listImages(f *runtimeapi.ImageFilter) []*runtimeapi.Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	if want := f.GetImage().GetImage(); want != "" {
		if im := r.lookupImageLocked(want); im != nil {
			out = append(out, im.toCRI())
		}
		return out
	}
	out = make([]*runtimeapi.Image, 0, len(r.imgOrder))
	for _, im := range r.imgOrder {
		out = append(out, im.toCRI())
	}
	return out
}

// StreamImages is ListImages as a stream.
func (r *Runtime) StreamImages(req *runtimeapi.StreamImagesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	list := func() []*runtimeapi.Image { return r.listImages(req.GetFilter()) }
	return streamList(stream.Context(), r, mStreamImages, req, "images", list, func(c []*runtimeapi.Image) error {
		return stream.Send(&runtimeapi.StreamImagesResponse{Images: c})
	})
}

// ImageStatus answers with the image, or with no image if it is not present.
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	return call(ctx, r, mImageStatus, req, func(ctx context.Context, req *runtimeapi.ImageStatusRequest, cc *callCtx) (*runtimeapi.ImageStatusResponse, error) {
		name := req.GetImage().GetImage()
		if name == "" {
			return nil, status.Error(codes.InvalidArgument, "image is required")
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		im := r.lookupImageLocked(name)
		if im == nil {
			cc.resp = "absent"
			return &runtimeapi.ImageStatusResponse{}, nil
		}
		cc.resp = im.id
		resp := &runtimeapi.ImageStatusResponse{Image: im.toCRI()}
		if req.Verbose {
			info, _ := json.Marshal(map[string]any{
				"imageSpec": map[string]any{
					"architecture": "amd64", "os": "linux",
					"config": map[string]any{"Env": []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
				},
				"chainID":  digestOf("chain", im.manifest),
				"pulledAt": im.pulledAt.UTC().Format(time.RFC3339Nano),
				"size":     im.size,
			})
			resp.Info = map[string]string{"info": string(info)}
		}
		return resp, nil
	})
}

// PullImage pretends to pull: it takes the scripted duration on the clock,
// may fail as scripted, and consumes image filesystem space.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	return call(ctx, r, mPullImage, req, func(ctx context.Context, req *runtimeapi.PullImageRequest, cc *callCtx) (*runtimeapi.PullImageResponse, error) {
		raw := req.GetImage().GetImage()
		ref, err := parseImageRef(raw)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "failed to pull image %q: %v", raw, err)
		}
		c := r.cur.Load()
		manifest, size, rule := plannedImage(c, raw, ref)
		failMsg := func(why string) string {
			return fmt.Sprintf("failed to pull and unpack image %q: %s", ref.String(), why)
		}
		if rule != nil && rule.Auth != nil && !authMatches(rule.Auth, req.GetAuth()) {
			return nil, status.Error(codes.Unknown, failMsg(fmt.Sprintf(
				"failed to resolve reference %q: pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials", ref.String())))
		}
		r.mu.Lock()
		present := r.lookupImageLocked(ref.String())
		fails := false
		if rule != nil && rule.PullError != nil {
			rule.Pulls[ref.String()]++
			fails = rule.PullError.Times == 0 || rule.Pulls[ref.String()] <= rule.PullError.Times
		}
		r.mu.Unlock()
		// a present image with the same manifest only needs a manifest check
		if present == nil || present.manifest != manifest || fails {
			if rule != nil {
				if err := r.sleep(ctx, rule.PullDuration.D()); err != nil {
					return nil, ctxErr(err)
				}
			}
		}
		if fails {
			msg := rule.PullError.Message
			if msg == "" {
				msg = fmt.Sprintf("failed to resolve reference %q: %s: not found", ref.String(), ref.String())
			}
			return nil, status.Error(rule.PullCode, failMsg(msg))
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if cur := r.lookupImageLocked(ref.String()); cur == nil || cur.manifest != manifest {
			fs := r.fsUsageLocked(c, r.now())
			if fs.image.used+size > c.ImageFs.Capacity {
				return nil, status.Error(codes.Unknown, failMsg(fmt.Sprintf(
					"failed to extract layer %s: write %s/snapshots: no space left on device", digestOf("layer", manifest), c.ImageFs.Mountpoint)))
			}
		}
		im := r.addImageLocked(ref, manifest, size, rule, false)
		cc.resp = im.id
		return &runtimeapi.PullImageResponse{ImageRef: im.id}, nil
	})
}

func authMatches(want *script.Auth, got *runtimeapi.AuthConfig) bool {
	if got == nil {
		return false
	}
	user, pass := got.Username, got.Password
	if got.Auth != "" {
		if b, err := base64.StdEncoding.DecodeString(got.Auth); err == nil {
			if u, p, ok := strings.Cut(string(b), ":"); ok {
				user, pass = u, p
			}
		}
	}
	return user == want.Username && pass == want.Password
}

// RemoveImage removes the image and all its tags; removing an absent image succeeds.
func (r *Runtime) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	return call(ctx, r, mRemoveImage, req, func(ctx context.Context, req *runtimeapi.RemoveImageRequest, cc *callCtx) (*runtimeapi.RemoveImageResponse, error) {
		name := req.GetImage().GetImage()
		if name == "" {
			return nil, status.Error(codes.InvalidArgument, "image is required")
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if im := r.lookupImageLocked(name); im != nil {
			r.removeImageLocked(im)
			// What went and how much it gave back, so a trace of garbage collection reads by name.
			cc.resp = fmt.Sprintf("%s %s size=%d", im.id, strings.Join(im.repoTags, ","), im.size)
		} else {
			cc.resp = "absent"
		}
		return &runtimeapi.RemoveImageResponse{}, nil
	})
}

// ImageFsInfo reports the image filesystem and the one holding writable layers.
func (r *Runtime) ImageFsInfo(ctx context.Context, req *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return call(ctx, r, mImageFsInfo, req, func(ctx context.Context, req *runtimeapi.ImageFsInfoRequest, cc *callCtx) (*runtimeapi.ImageFsInfoResponse, error) {
		return locked(r, func(c *script.Compiled, now time.Time) (*runtimeapi.ImageFsInfoResponse, error) {
			u := r.fsUsageLocked(c, now)
			mk := func(f fsUse) *runtimeapi.FilesystemUsage {
				return &runtimeapi.FilesystemUsage{
					Timestamp:  ts(now),
					FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: f.cfg.Mountpoint},
					UsedBytes:  &runtimeapi.UInt64Value{Value: f.used},
					InodesUsed: &runtimeapi.UInt64Value{Value: f.inodesUsed},
				}
			}
			resp := &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{mk(u.image)}}
			if c.ContainersOnRoot {
				resp.ContainerFilesystems = []*runtimeapi.FilesystemUsage{mk(u.root)}
			} else {
				resp.ContainerFilesystems = []*runtimeapi.FilesystemUsage{mk(u.image)}
			}
			cc.resp = fmt.Sprintf("image_used=%d", u.image.used)
			return resp, nil
		})
	})
}
