/** The job kinds the examples share: define them once, import them everywhere. */
import { backoff, defineJobs, job } from "errand";

/** A user signed up. */
export type SendWelcome = { userId: number; email: string };
/** An image to resize. */
export type ResizeImage = { url: string; width: number };

/** The application's job kinds. */
export const jobs = defineJobs({
  sendWelcome: job<SendWelcome>({ queue: "mail", attempts: 8, timeout: "30s" }),
  resizeImage: job<ResizeImage>({ attempts: 3, retry: backoff.fixed("1s") }),
});
