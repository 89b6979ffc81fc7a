DROP INDEX policies_review_due;
