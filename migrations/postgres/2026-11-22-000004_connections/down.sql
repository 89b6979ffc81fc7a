DROP TABLE connections;
