package sleeve

import "testing"

// A ConnectionEstablished control message is sent once; it must reach the
// forwarder goroutine even when a burst of heartbeats, probes and
// PMTUVerified replies has filled the event queue (under load the
// goroutine lags; a lost one left the link unestablished for good).
func TestEstablishedSurvivesAFullEventQueue(t *testing.T) {
	f := &forwarder{events: make(chan event, 4), kickCh: make(chan struct{}, 1)}
	for range cap(f.events) {
		f.post(event{kind: evProbe, n: 1400})
	}
	for range 100 {
		f.kick(evHeartbeat)
	}
	f.ControlMessage(TagConnectionEstablished, nil)
	select {
	case <-f.kickCh:
	default:
		t.Fatal("no wake-up pending for the forwarder goroutine")
	}
	kinds := f.kicks.Swap(0)
	for _, k := range []int{evHeartbeat, evEstablished} {
		if kinds&(1<<k) == 0 {
			t.Errorf("event kind %d lost (pending kinds %b)", k, kinds)
		}
	}
	if kinds&(1<<evFragReceived) != 0 {
		t.Errorf("kind %d pending, never kicked (pending kinds %b)", evFragReceived, kinds)
	}
	select {
	case <-f.kickCh:
		t.Error("a second wake-up for one batch of kicks")
	default:
	}
}
