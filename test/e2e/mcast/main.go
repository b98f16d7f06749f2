// Command mcast is the end-to-end tests' UDP multicast probe: "send"
// repeats a message to a group out of one interface, "recv" joins the group
// on one interface and exits 0 once it has received the expected message.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mcast:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: mcast send|recv [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	group := fs.String("group", "239.1.2.3:5454", "multicast group address:port")
	iface := fs.String("iface", "ethwe", "interface to send on or join the group on")
	msg := fs.String("msg", "weave-mcast", "payload to send or expect")
	count := fs.Int("count", 100, "send: datagrams to send")
	interval := fs.Duration("interval", 100*time.Millisecond, "send: gap between datagrams")
	timeout := fs.Duration("timeout", 20*time.Second, "recv: give up after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	gaddr, err := net.ResolveUDPAddr("udp4", *group)
	if err != nil {
		return fmt.Errorf("resolve group %s: %w", *group, err)
	}
	ifi, err := net.InterfaceByName(*iface)
	if err != nil {
		return fmt.Errorf("find interface %s: %w", *iface, err)
	}
	switch args[0] {
	case "send":
		return send(gaddr, ifi, *msg, *count, *interval)
	case "recv":
		return recv(gaddr, ifi, *msg, *timeout)
	}
	return fmt.Errorf("unknown mode %q", args[0])
}

// send sets IP_MULTICAST_IF (see setMulticastIf) so the group needs no route.
func send(gaddr *net.UDPAddr, ifi *net.Interface, msg string, count int, interval time.Duration) error {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		return setMulticastIf(c, ifi.Index)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", ":0")
	if err != nil {
		return fmt.Errorf("open sender socket: %w", err)
	}
	defer pc.Close()
	for i := 0; i < count; i++ {
		if _, err := pc.WriteTo([]byte(msg), gaddr); err != nil {
			return fmt.Errorf("send to %s: %w", gaddr, err)
		}
		time.Sleep(interval)
	}
	return nil
}

func recv(gaddr *net.UDPAddr, ifi *net.Interface, want string, timeout time.Duration) error {
	conn, err := net.ListenMulticastUDP("udp4", ifi, gaddr)
	if err != nil {
		return fmt.Errorf("join %s on %s: %w", gaddr, ifi.Name, err)
	}
	defer conn.Close()
	fmt.Fprintln(os.Stderr, "joined", gaddr)
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	buf := make([]byte, 2048)
	for {
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			return fmt.Errorf("receive on %s: %w", gaddr, err)
		}
		if string(buf[:n]) == want {
			fmt.Printf("received %q from %s\n", want, from)
			return nil
		}
	}
}
