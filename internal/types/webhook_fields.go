package types

// KeepFields copies to w from cur the fields an update of a webhook (WebhookRepo.Update, the admin
// API's PATCH) never changes: identity, tenant, secret and the times the registry sets.
func KeepFields(w, cur *Webhook) {
	w.ID, w.Tenant, w.Secret, w.PublicKey, w.Asymmetric, w.CreatedAt = cur.ID, cur.Tenant, cur.Secret, cur.PublicKey,
		cur.Asymmetric, cur.CreatedAt
	w.UpdatedAt = cur.UpdatedAt
}
