DROP TABLE findings;
DROP TABLE check_results;
DROP TABLE check_runs;
