package proxy

import (
	"net/http"
	"sync"

	gwebsocket "github.com/gorilla/websocket"
	"k8s.io/client-go/tools/portforward"
)

// tunnelFrameHeader is a server's WebSocket header of a frame of 126 to 65,535 bytes (no mask).
const tunnelFrameHeader = 4

// tunnelFramePayload is the most a tunnel frame carries: with its header, a full TLS record's
// plaintext (16 KiB), so one frame is one record and one write on the client's connection.
const tunnelFramePayload = 16<<10 - tunnelFrameHeader

// tunnelWriteBuffers lend the tunnels their frame buffer only while a frame is written: an idle
// tunnel holds none.
var tunnelWriteBuffers = &sync.Pool{}

// tunnelUpgrader upgrades a tunnelling request with a frame buffer of one tunnelFramePayload.
func tunnelUpgrader(subprotocols []string) *gwebsocket.Upgrader {
	return &gwebsocket.Upgrader{
		CheckOrigin:     func(*http.Request) bool { return true },
		Subprotocols:    subprotocols,
		WriteBufferSize: tunnelFramePayload,
		WriteBufferPool: tunnelWriteBuffers,
	}
}

// tunnelConn is client-go's TunnelingConnection (reading, closing) whose Write sends each write
// as frames of at most tunnelFramePayload, each frame header and payload in one write. The
// connection it replaces sent a frame's header, its payload and an empty final frame in three
// writes, each a TLS record of its own and a system call: two in three records of a 256 MiB
// port-forward carried a few header bytes.
type tunnelConn struct {
	*portforward.TunnelingConnection
	ws *gwebsocket.Conn
}

func newTunnelConn(tc *portforward.TunnelingConnection, ws *gwebsocket.Conn) *tunnelConn {
	return &tunnelConn{TunnelingConnection: tc, ws: ws}
}

func (c *tunnelConn) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), tunnelFramePayload)]
		if err := c.ws.WriteMessage(gwebsocket.BinaryMessage, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}
