// A gorilla/websocket peer for tickwire's interop run (interop/peers.sh).
//
//	gorilla-peer client URL [-no-deflate] [-ca FILE]
//	                          connects, sends the message set, checks every echo, closes 1000;
//	                          offers permessage-deflate and requires it, or with -no-deflate
//	                          offers nothing and requires no extension; a wss:// URL is
//	                          verified against the CA certificate in FILE (PEM)
//	gorilla-peer server       listens on 127.0.0.1:0, prints `port N`, does the same with the
//	                          first connection (a `tickwire connect --echo --deflate`), then
//	                          exits
//
// Prints `ok   LABEL` or `FAIL LABEL: reason`; the exit status is 0 only on `ok`. The message
// set is the one interop/peers/ws_peer.js sends.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

type message struct {
	kind int
	data []byte
}

// Text and binary messages, empty to 1 MiB, then 100 small ones pipelined.
func messageSet() []message {
	pattern := func(n int, f func(int) byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = f(i)
		}
		return b
	}
	set := []message{
		{websocket.TextMessage, []byte("hello from gorilla")},
		{websocket.TextMessage, []byte("ünïcode € 🚀")},
		{websocket.TextMessage, []byte{}},
		{websocket.TextMessage, []byte(strings.Repeat(`{"px":"64000.25","qty":"0.5"},`, 2185))},
		{websocket.BinaryMessage, pattern(1000, func(i int) byte { return byte(i) })},
		{websocket.BinaryMessage, pattern(1<<20, func(i int) byte { return byte(i*31 + 7) })},
		{websocket.BinaryMessage, []byte{}},
	}
	for i := 0; i < 100; i++ {
		set = append(set, message{websocket.TextMessage, []byte(fmt.Sprintf(`{"seq":%d}`, i))})
	}
	return set
}

// exchange checks that permessage-deflate was negotiated exactly when wanted, writes the set
// from one goroutine while this one reads and checks the echoes in order (gorilla allows one
// reader and one writer at a time), then closes with 1000 and waits for the peer's close.
func exchange(conn *websocket.Conn, compressed bool, wanted bool) (string, error) {
	if compressed != wanted {
		return "", fmt.Errorf("permessage-deflate negotiated: %v, wanted: %v", compressed, wanted)
	}
	conn.SetReadLimit(4 << 20)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	set := messageSet()
	written := make(chan error, 1)
	go func() {
		for _, m := range set {
			if err := conn.WriteMessage(m.kind, m.data); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	for i, want := range set {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return "", fmt.Errorf("echo %d: %v", i, err)
		}
		if kind != want.kind || !bytes.Equal(data, want.data) {
			return "", fmt.Errorf("echo %d differs (%d B, expected %d B)", i, len(data), len(want.data))
		}
	}
	if err := <-written; err != nil {
		return "", fmt.Errorf("write: %v", err)
	}
	closing := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	if err := conn.WriteControl(websocket.CloseMessage, closing, time.Now().Add(5*time.Second)); err != nil {
		return "", fmt.Errorf("close: %v", err)
	}
	_, _, err := conn.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		return "", fmt.Errorf("after our close 1000: %v", err)
	}
	state := "off"
	if compressed {
		state = "on"
	}
	return fmt.Sprintf("%d echoes, deflate %s", len(set), state), nil
}

func report(label string, detail string, err error) {
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", label, err)
		os.Exit(1)
	}
	fmt.Printf("ok   %s: %s\n", label, detail)
	os.Exit(0)
}

func negotiated(header http.Header) bool {
	return strings.Contains(header.Get("Sec-WebSocket-Extensions"), "permessage-deflate")
}

// client runs `gorilla-peer client URL [-no-deflate] [-ca FILE]`.
func client(url string, args []string) {
	flags := flag.NewFlagSet("client", flag.ExitOnError)
	noDeflate := flags.Bool("no-deflate", false, "offer no extension and require none")
	caFile := flags.String("ca", "", "PEM file of the CA that signed a wss:// server's certificate")
	flags.Parse(args)
	scheme, _, _ := strings.Cut(url, ":")
	label := "gorilla client -> tickwire serve"
	if !*noDeflate {
		label += " --deflate"
	}
	label += " (" + scheme + "://)"
	dialer := websocket.Dialer{EnableCompression: !*noDeflate, HandshakeTimeout: 5 * time.Second}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			report(label, "", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			report(label, "", fmt.Errorf("no certificate in %s", *caFile))
		}
		dialer.TLSClientConfig = &tls.Config{RootCAs: roots}
	}
	conn, response, err := dialer.Dial(url, nil)
	if err != nil {
		report(label, "", err)
	}
	detail, err := exchange(conn, negotiated(response.Header), !*noDeflate)
	report(label, detail, err)
}

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "client" {
		client(os.Args[2], os.Args[3:])
	}
	if len(os.Args) == 2 && os.Args[1] == "server" {
		label := "tickwire connect -> gorilla server"
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			report(label, "", err)
		}
		fmt.Printf("port %d\n", listener.Addr().(*net.TCPAddr).Port)
		upgrader := websocket.Upgrader{EnableCompression: true}
		http.Serve(listener, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, err := upgrader.Upgrade(w, r, nil)
			if err != nil {
				report(label, "", err)
			}
			compressed := strings.Contains(w.Header().Get("Sec-WebSocket-Extensions"), "permessage-deflate")
			detail, err := exchange(conn, compressed || negotiated(r.Header), true)
			report(label, detail, err)
		}))
	}
	fmt.Fprintln(os.Stderr, "usage: gorilla-peer client URL [-no-deflate] [-ca FILE] | server")
	os.Exit(2)
}
