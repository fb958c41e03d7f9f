package uitest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smartdrop/webhooks"
)

// TestUIPayloadExpired: once a delivery's payload is past Options.PayloadRetention, its page says when
// the payload expired instead of showing a body, keeps its attempts, and does not offer to send it
// again, saying why.
func TestUIPayloadExpired(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.PayloadRetention = webhooks.MinPayloadRetention })
	_, dl := e.deliverOne(webhooks.Webhook{URL: e.rcURL + "/unavailable", Events: []string{"invoice.*"}},
		webhooks.Event{Type: "invoice.paid", ID: "inv_9", Data: map[string]string{"id": "in_9"}}, webhooks.StatusFailed)

	e.open("#/deliveries/"+dl.ID, "delivery")
	assert.Contains(t, e.text("#payload"), "in_9", "before it expires, the page shows the body")
	assert.Equal(t, "false", e.eval(`String(document.querySelector('#redeliver').disabled)`), "a failed delivery is offered again")

	e.mr.FastForward(webhooks.MinPayloadRetention + time.Second)
	e.open("#/", "endpoints") // then the delivery's page afresh
	e.open("#/deliveries/"+dl.ID, "delivery")
	expiredOn := dl.CreatedAt.Add(webhooks.MinPayloadRetention)
	got := e.text("#payload")
	assert.True(t, strings.HasPrefix(got, "Payload expired on "), "%q", got)
	assert.Contains(t, got, expiredOn.UTC().Format("2006-01-02"), "the day it expired")
	assert.NotContains(t, got, "in_9", "the expired body is not shown")
	assert.Equal(t, "true", e.eval(`String(document.querySelector('#redeliver').disabled)`), "nothing to send again")
	assert.Equal(t, "Its payload expired: there is nothing to send again", e.eval(`document.querySelector('#redeliver').title`))
	assert.NotEqual(t, "0", e.eval(`String(document.querySelectorAll('#attempts tbody tr').length)`), "its attempts are kept")
	e.shot("86-delivery-payload-expired")
	e.noIssues()
}
