-- The review worker's look-up of published policies whose review date has passed.
CREATE INDEX policies_review_due ON policies (status, review_date);
