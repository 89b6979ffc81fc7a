DROP TABLE attachments;
DROP TABLE comments;
DROP TABLE tasks;
