/**
 * The documentation site (VitePress): `npm run docs` serves it while you
 * write, `npm run docs:build` builds it into docs/.vitepress/dist and fails on
 * a link to a page or a heading that does not exist.
 */
import { defineConfig } from "vitepress";
import { checkAnchors } from "./anchors.ts";

export default defineConfig({
  title: "errand",
  description: "Durable background jobs for TypeScript on the database you already have",
  cleanUrls: true,
  lastUpdated: false,
  buildEnd: checkAnchors,
  themeConfig: {
    nav: [
      { text: "Get started", link: "/getting-started/" },
      { text: "Guides", link: "/guides/defining-jobs" },
      { text: "Reference", link: "/reference/options" },
    ],
    search: { provider: "local" },
    outline: [2, 3],
    sidebar: [
      {
        text: "Getting started",
        items: [
          { text: "Choose a runtime", link: "/getting-started/" },
          { text: "Node", link: "/getting-started/node" },
          { text: "Deno", link: "/getting-started/deno" },
          { text: "Bun", link: "/getting-started/bun" },
        ],
      },
      {
        text: "Concepts",
        items: [
          { text: "Glossary", link: "/concepts/glossary" },
          { text: "Job lifecycle", link: "/concepts/lifecycle" },
          { text: "Delivery guarantees", link: "/concepts/delivery" },
          { text: "Modes", link: "/concepts/modes" },
        ],
      },
      {
        // Grouped by what a reader comes to do; a new guide is one line in the group it serves.
        text: "Guides",
        items: [
          {
            text: "Defining and enqueueing",
            items: [
              { text: "Defining jobs", link: "/guides/defining-jobs" },
              { text: "Enqueueing", link: "/guides/enqueueing" },
              { text: "Transactions", link: "/guides/transactions" },
              { text: "Unique jobs", link: "/guides/unique-jobs" },
              { text: "Recurring jobs: cron and intervals", link: "/guides/cron" },
            ],
          },
          {
            text: "Running",
            items: [
              { text: "Workers", link: "/guides/workers" },
              { text: "Retries and errors", link: "/guides/retries" },
              { text: "Flow control", link: "/guides/flow-control" },
              { text: "Graceful shutdown and deploys", link: "/guides/shutdown" },
              { text: "Serverless drain", link: "/guides/serverless-drain" },
            ],
          },
          {
            text: "Results, continuations and workflows",
            items: [
              { text: "Results and progress", link: "/guides/results" },
              { text: "Continuations", link: "/guides/continuations" },
              { text: "Workflows", link: "/guides/workflows" },
            ],
          },
          {
            text: "Topics and logs",
            items: [
              { text: "Topics and partitions", link: "/guides/topics" },
              { text: "Retained logs", link: "/guides/logs" },
            ],
          },
          {
            text: "Operating and testing",
            items: [
              { text: "Operating jobs", link: "/guides/operating" },
              { text: "Admin router and dashboard", link: "/guides/admin" },
              { text: "Observability", link: "/guides/observability" },
              { text: "Database health", link: "/guides/health" },
              { text: "Testing", link: "/guides/testing" },
            ],
          },
          {
            text: "Stores",
            items: [
              { text: "libSQL and SQLite", link: "/guides/libsql" },
              { text: "SQLite drivers", link: "/guides/sqlite" },
              { text: "PostgreSQL", link: "/guides/postgres" },
              { text: "Moving a store", link: "/guides/moving" },
            ],
          },
        ],
      },
      {
        text: "Deploying",
        items: [
          { text: "Node servers", link: "/deploying/node" },
          { text: "Bun workers", link: "/deploying/bun" },
          { text: "Cloudflare Workers", link: "/deploying/cloudflare-workers" },
          { text: "Deno Deploy", link: "/deploying/deno-deploy" },
          { text: "Vercel and Netlify", link: "/deploying/vercel-netlify" },
          { text: "PgBouncer", link: "/deploying/pgbouncer" },
          { text: "Past one primary", link: "/deploying/distributed-postgres" },
          { text: "Kubernetes", link: "/deploying/kubernetes" },
        ],
      },
      {
        text: "Reference",
        items: [
          { text: "Options", link: "/reference/options" },
          { text: "Errors", link: "/reference/errors" },
          { text: "Admin HTTP API", link: "/reference/http-api" },
          { text: "Command line", link: "/reference/cli" },
          { text: "Metrics", link: "/reference/metrics" },
          { text: "Schema", link: "/reference/schema" },
          { text: "Store adapters", link: "/reference/store-adapters" },
        ],
      },
      {
        text: "Migrating",
        items: [
          { text: "From pg-boss", link: "/migrating/pg-boss" },
          { text: "From graphile-worker", link: "/migrating/graphile-worker" },
          { text: "From BullMQ", link: "/migrating/bullmq" },
          { text: "From DBOS, Inngest, Vercel Workflow", link: "/migrating/workflows" },
        ],
      },
      {
        text: "More",
        items: [
          { text: "Reliability", link: "/reliability" },
          { text: "Troubleshooting", link: "/troubleshooting" },
          { text: "Benchmarks", link: "/benchmarks" },
        ],
      },
    ],
  },
});
