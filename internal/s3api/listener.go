package s3api

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// net/http refuses a request whose request line and headers exceed the
// server's MaxHeaderBytes before any handler sees it, by writing this fixed
// plain-text answer straight to the connection and closing it (net/http's
// conn.serve, errTooLarge). S3 clients expect S3's XML error there.
const netHTTPHeaderTooLarge = "HTTP/1.1 431 Request Header Fields Too Large\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
	"431 Request Header Fields Too Large"

// Listener returns ln with its TCP connections wrapped so that net/http's
// answer to an oversized header section is replaced, on the wire, by S3's:
// 400 RequestHeaderSectionTooLarge as an XML error document, with the
// connection closed as before. maxHeaderBytes is the server's
// MaxHeaderBytes, reported in the error's MaxSizeAllowed element.
//
// The replacement matches only a single Write of exactly net/http's fixed
// answer, which net/http makes with nothing else pending on the
// connection: response bytes written by handlers go through net/http's
// buffered writer together with their status line and headers, and never
// arrive as that exact write. TestHeaderSectionTooLarge fails if a Go
// release changes the text. Connections other than TCP are not wrapped.
func Listener(ln net.Listener, maxHeaderBytes int) net.Listener {
	return &headerLimitListener{Listener: ln, max: strconv.Itoa(maxHeaderBytes), ids: newRequestIDs()}
}

type headerLimitListener struct {
	net.Listener
	max string
	ids func() string
}

func (l *headerLimitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		return &headerLimitConn{TCPConn: tc, l: l}, err
	}
	return c, err
}

// headerLimitConn embeds the *net.TCPConn so that net/http still finds
// ReadFrom (sendfile, splice) and CloseWrite on it.
type headerLimitConn struct {
	*net.TCPConn
	l *headerLimitListener
}

func (c *headerLimitConn) Write(p []byte) (int, error) {
	if len(p) != len(netHTTPHeaderTooLarge) || string(p) != netHTTPHeaderTooLarge {
		return c.TCPConn.Write(p)
	}
	id := c.l.ids()
	e := s3err.New(s3err.RequestHeaderSectionTooLarge, "").With("MaxSizeAllowed", c.l.max)
	var body bytes.Buffer
	if err := s3xml.EncodeError(&body, e, id, hostID(id)); err != nil {
		return c.TCPConn.Write(p)
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 400 Bad Request\r\nContent-Type: application/xml\r\nConnection: close\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(body.Len()) + "\r\n")
	b.WriteString("Date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\nServer: Coffer\r\n")
	b.WriteString("x-amz-request-id: " + id + "\r\nx-amz-id-2: " + hostID(id) + "\r\n\r\n")
	b.Write(body.Bytes())
	if _, err := c.TCPConn.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}
