module tickwire-interop/gorilla-peer

go 1.21

require github.com/gorilla/websocket v1.5.3
