DROP TABLE automation_runs;
DROP TABLE browser_automations;
